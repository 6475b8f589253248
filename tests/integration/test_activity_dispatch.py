"""The activity dispatcher: each event handed to the consumers once, in order, committed with
what they added; a failing consumer rolls its batch back; concurrent dispatchers share the
work; the runner wires the webhook fan-out; migration 0005 leaves history dispatched."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import FakeClock
from mailbridge.runner import Runner
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.runner import default_workers
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.services.webhooks import _subscriptions as webhooks
from mailbridge.services.webhooks._activity_dispatch import ActivityConsumer, default_consumers
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade_async
from mailbridge.storage.tables import ActivityEvent, Webhook, WebhookDelivery
from tests.integration.conftest import Tenant
from tests.webhook_receiver import webhook_receiver


class Recording:
    """A consumer that remembers what it saw and can be told to fail."""

    name = "recording"

    def __init__(self, fail_on: str | None = None) -> None:
        self.seen: list[str] = []
        self.fail_on = fail_on
        self.committed = 0

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        if self.fail_on is not None and any(e.data.get("n") == self.fail_on for e in events):
            raise RuntimeError("this consumer is broken for that event")
        self.seen.extend(str(event.data["n"]) for event in events)

    def dispatched(self) -> None:
        self.committed += 1


async def record(context: ServiceContext, team_id: str, count: int, start: int = 0) -> None:
    async with context.database.session() as session:
        for number in range(start, start + count):
            record_event(session, context.clock, team_id, "contact.created", {"n": str(number)})
        await session.commit()


async def undispatched(context: ServiceContext) -> int:
    async with context.database.session() as session:
        query = select(func.count()).where(ActivityEvent.dispatched_at.is_(None))
        return int(await session.scalar(query) or 0)


async def test_each_event_is_handed_out_once_in_order(
    context: ServiceContext, tenant: Tenant
) -> None:
    await record(context, tenant.team_id, 12)
    consumer = Recording()
    dispatcher = ActivityDispatcher(context, [consumer], batch_size=5)
    assert await dispatcher.dispatch_all() == 12
    assert consumer.seen == [str(n) for n in range(12)]
    assert consumer.committed == 3  # batches of 5, 5 and 2
    assert await undispatched(context) == 0
    assert await dispatcher.dispatch_all() == 0
    assert len(consumer.seen) == 12


async def test_a_failing_consumer_rolls_its_batch_back(
    context: ServiceContext, tenant: Tenant
) -> None:
    hook = await _webhook(context, tenant)
    await record(context, tenant.team_id, 3)
    # The fan-out adds deliveries before the broken consumer raises: they roll back with it.
    broken: list[ActivityConsumer] = [*default_consumers(context), Recording(fail_on="0")]
    dispatcher = ActivityDispatcher(context, broken)
    assert await dispatcher.dispatch_all() == 2  # the batch failed; one by one, "0" fails alone
    assert await undispatched(context) == 1
    async with context.database.session() as session:
        delivered = await session.execute(select(WebhookDelivery.webhook_id, WebhookDelivery.body))
        rows = list(delivered.tuples())
    assert len(rows) == 2 and all(webhook_id == hook.id for webhook_id, _ in rows)
    assert all('"n":"0"' not in body for _, body in rows)

    healed = Recording()
    assert await ActivityDispatcher(context, [healed]).dispatch_all() == 1
    assert healed.seen == ["0"]
    assert await undispatched(context) == 0


async def test_concurrent_dispatchers_share_the_events(
    context: ServiceContext, tenant: Tenant
) -> None:
    await record(context, tenant.team_id, 300)
    consumers = [Recording() for _ in range(3)]
    dispatchers = [ActivityDispatcher(context, [c], batch_size=7) for c in consumers]
    counts = await asyncio.gather(*(d.dispatch_all() for d in dispatchers))
    assert sum(counts) == 300
    seen = [n for consumer in consumers for n in consumer.seen]
    assert sorted(seen, key=int) == [str(n) for n in range(300)]


async def test_the_runner_delivers_webhooks_by_itself(
    context: ServiceContext, tenant: Tenant
) -> None:
    assert {"activity", "webhooks"} <= {worker.name for worker in default_workers(context)}
    context.settings = context.settings.model_copy(update={"webhook_allow_private": True})
    with webhook_receiver() as receiver:
        async with context.database.session() as session:
            hook = await webhooks.create_webhook(
                session, context.clock, context.settings, tenant.team_id, receiver.url(),
                ["contact.created"],
            )  # fmt: skip
        worker = WebhookWorker(context)
        consumers = default_consumers(context, on_webhook_deliveries=worker.deliveries_added)
        runner = Runner(context, workers=[worker, ActivityDispatcher(context, consumers)], ticks=[])
        await runner.start_in_background()
        try:
            await record(context, tenant.team_id, 5)
            requests = await asyncio.to_thread(receiver.wait_for, 5, 30.0)
        finally:
            await runner.stop()
    assert sorted(r.payload["data"]["n"] for r in requests) == [str(n) for n in range(5)]
    assert all(r.signed_with(hook.secret) for r in requests)


async def test_migration_0005_leaves_earlier_events_dispatched(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    await upgrade_async(url, revision="0004")
    database = Database(url)
    try:
        async with database.engine.begin() as connection:
            await connection.execute(
                sa.text("INSERT INTO teams (id, name, plan, created_at) VALUES "
                        "('t1', 'acme', 'free', '2026-01-01 00:00:00')")
            )  # fmt: skip
            await connection.execute(
                sa.text("INSERT INTO activity_events (id, team_id, type, data, created_at) "
                        "VALUES ('e1', 't1', 'contact.created', '{}', '2026-01-02 03:04:05')")
            )  # fmt: skip
        await upgrade_async(url)
        async with database.session() as session:
            event = await session.get(ActivityEvent, "e1")
            assert event is not None and event.dispatched_at == event.created_at
            record_event(session, FakeClock(), "t1", "contact.created", {})
            await session.commit()
            waiting = await session.scalar(
                select(func.count()).where(ActivityEvent.dispatched_at.is_(None))
            )
        assert waiting == 1
    finally:
        await database.dispose()


async def _webhook(context: ServiceContext, tenant: Tenant) -> Webhook:
    settings = context.settings.model_copy(update={"webhook_allow_private": True})
    async with context.database.session() as session:
        return await webhooks.create_webhook(
            session, context.clock, settings, tenant.team_id, "http://127.0.0.1:9/x",
            ["contact.created"],
        )  # fmt: skip
