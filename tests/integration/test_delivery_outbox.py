"""The file outbox: one .eml per email, exactly once, whatever is killed when."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from email.parser import BytesParser
from pathlib import Path

import dkim as dkimpy
import pytest
from sqlalchemy import select, update

from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.mail.dkim import txt_value
from mailbridge.mail.providers import OutboxProvider
from mailbridge.mail.return_path import return_path_address
from mailbridge.runner import Runner
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Domain, Email, EmailEvent
from tests.integration.conftest import Tenants
from tests.integration.email_factory import add_domain, add_email, load_email


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_context(settings: Settings, database: Database, clock: FakeClock) -> ServiceContext:
    return ServiceContext(settings=settings, database=database, clock=clock)


@pytest.fixture
async def shop(fake_context: ServiceContext) -> Domain:
    tenant = await Tenants(fake_context).create()
    return await add_domain(fake_context, tenant.team_id)


def outbox_of(settings: Settings) -> Path:
    return settings.data_dir / "outbox"


def files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.rglob("*.eml"))


async def test_the_default_provider_writes_one_file_per_email(
    fake_context: ServiceContext, shop: Domain
) -> None:
    email = await add_email(fake_context, shop, to=["ann@corp.io"], bcc=["bo@hidden.io"])
    async with DeliveryWorker(fake_context) as worker:  # no MAILBRIDGE_SMTP_URL
        await worker.deliver_due()

    outbox = outbox_of(fake_context.settings)
    assert files(outbox) == [f"{email.id}.eml"]
    content = (outbox / f"{email.id}.eml").read_bytes()
    message = BytesParser().parsebytes(content)
    secret = await instance_secret(fake_context.database, fake_context.settings)
    return_path = return_path_address(secret, email.id, "send.shop.io")
    assert message["Return-Path"] == f"<{return_path}>"
    assert re.fullmatch(rf"bounces\+{email.id}-[a-z2-7]{{16}}@send\.shop\.io", return_path)
    assert message.get_all("Envelope-To") == ["ann@corp.io", "bo@hidden.io"]
    assert message["Message-ID"] == email.message_id and message["Bcc"] is None
    record = txt_value(shop.dkim_public_key).encode()
    assert dkimpy.verify(content, dnsfunc=lambda name, timeout=5: record) is True
    stored = await load_email(fake_context, email.id)
    assert stored.status == "delivered"


async def crash_after_commit(context: ServiceContext, email: Email, owner: str) -> None:
    """What a runner killed between the handover commit and the rename leaves behind."""
    provider = OutboxProvider(outbox_of(context.settings))
    provider.pending_path(email.id, owner).parent.mkdir(parents=True, exist_ok=True)
    provider.pending_path(email.id, owner).write_bytes(b"Subject: hello\r\n\r\nhi\r\n")
    now = context.clock.now()
    async with context.database.session() as session:
        await session.execute(
            update(Email)
            .where(Email.id == email.id)
            .values(
                status="sent", last_event="sent", sent_at=now, lease_owner=owner,
                due_at=now + timedelta(seconds=120), lease_until=now + timedelta(seconds=120),
            )
        )  # fmt: skip
        await session.commit()


async def test_a_handover_cut_short_is_finished_not_repeated(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    await crash_after_commit(fake_context, email, "dead-runner")
    outbox = outbox_of(fake_context.settings)

    async with DeliveryWorker(fake_context) as worker:
        assert await worker.deliver_due() == 0  # still leased to the dead runner
        assert files(outbox) == [f"{email.id}.dead-runner.eml"]
        clock.advance(timedelta(seconds=121))
        assert await worker.deliver_due() == 1

    assert files(outbox) == [f"{email.id}.eml"]
    assert (outbox / f"{email.id}.eml").read_bytes() == b"Subject: hello\r\n\r\nhi\r\n"
    settled = await load_email(fake_context, email.id)
    assert settled.status == "delivered" and settled.due_at is None


async def test_a_handover_whose_file_vanished_is_written_again(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    await crash_after_commit(fake_context, email, "dead-runner")
    outbox = outbox_of(fake_context.settings)
    for path in outbox.rglob("*.eml"):
        path.unlink()

    clock.advance(timedelta(seconds=121))
    async with DeliveryWorker(fake_context) as worker:
        # Settled (nothing in the outbox) and written again in the same go.
        assert await worker.deliver_due() == 1

    assert files(outbox) == [f"{email.id}.eml"]
    assert (await load_email(fake_context, email.id)).status == "delivered"
    async with fake_context.database.session() as session:
        types = await session.scalars(
            select(EmailEvent.type)
            .where(EmailEvent.email_id == email.id)
            .order_by(EmailEvent.created_at, EmailEvent.id)
        )
        # (the crash left no "sent" event: crash_after_commit only set the row; the
        # attempt's one "sent" is the dead runner's)
        assert list(types) == ["queued", "delivered"]


async def test_leftovers_of_attempts_that_never_committed_are_discarded(
    fake_context: ServiceContext, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    provider = OutboxProvider(outbox_of(fake_context.settings))
    leftover = provider.pending_path(email.id, "killed-before-commit")
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"partial")

    async with DeliveryWorker(fake_context) as worker:
        assert not leftover.exists()
        await worker.deliver_due()

    assert files(outbox_of(fake_context.settings)) == [f"{email.id}.eml"]


async def test_a_leftover_kept_at_start_is_swept_once_its_attempt_is_over(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    # A runner killed before its handover committed, restarted while its lease held.
    now = clock.now()
    async with fake_context.database.session() as session:
        await session.execute(
            update(Email)
            .where(Email.id == email.id)
            .values(lease_owner="killed", lease_until=now + timedelta(seconds=120))
        )
        await session.commit()
    provider = OutboxProvider(outbox_of(fake_context.settings))
    leftover = provider.pending_path(email.id, "killed")
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"partial")

    async with DeliveryWorker(fake_context) as worker:
        assert leftover.exists()  # its lease still holds: that attempt may be alive
        await worker.sweep_outbox(provider)
        assert leftover.exists()
        clock.advance(timedelta(seconds=121))
        assert await worker.deliver_due() == 1  # another attempt delivered it
        await worker.sweep_outbox(provider)

    assert not leftover.exists()
    assert files(outbox_of(fake_context.settings)) == [f"{email.id}.eml"]


async def wait_for(path: Path, seconds: float) -> bool:
    for _ in range(int(seconds / 0.01)):
        if path.exists():
            return True
        await asyncio.sleep(0.01)
    return path.exists()


async def test_the_runner_delivers_by_default_polling_for_due_emails(
    fake_context: ServiceContext, shop: Domain
) -> None:
    runner = Runner(fake_context, ticks=[])
    assert "delivery" in [worker.name for worker in runner.workers]
    await runner.start_in_background()
    try:
        await asyncio.sleep(0.05)
        email = await add_email(fake_context, shop)  # no notify: found by the poll
        assert await wait_for(outbox_of(fake_context.settings) / f"{email.id}.eml", 30.0)
    finally:
        await runner.stop()
    assert (await load_email(fake_context, email.id)).status == "delivered"


async def test_notify_wakes_the_worker_at_once(
    fake_context: ServiceContext, shop: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = DeliveryWorker(fake_context, poll_interval=60.0)
    looked = asyncio.Event()
    next_due = worker.next_due

    async def looking() -> datetime | None:
        due = await next_due()
        if due is None:
            looked.set()  # nothing due: the loop goes to sleep, for a minute
        return due

    monkeypatch.setattr(worker, "next_due", looking)
    runner = Runner(fake_context, workers=[worker], ticks=[])
    await runner.start_in_background()
    try:
        await asyncio.wait_for(looked.wait(), 30)
        email = await add_email(fake_context, shop)
        target = outbox_of(fake_context.settings) / f"{email.id}.eml"
        assert not await wait_for(target, 0.3)
        runner.notify("automations", "activity")  # work for other workers: still asleep
        assert not await wait_for(target, 0.3)
        runner.notify("delivery")
        assert await wait_for(target, 30.0)
    finally:
        await runner.stop()
