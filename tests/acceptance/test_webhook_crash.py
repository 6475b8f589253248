"""A runner SIGKILLed again and again while dispatching events and delivering webhooks: every
event still reaches the receiver, each event becomes exactly one delivery row, and every
delivery ends ``succeeded``.

The receiver is a real HTTP server in this process; the runner is the real
``mailbridge runner`` in a subprocess. Events are recorded before the first run and
between runs, so kills land while events are being fanned out as well as while POSTs
are in flight and outcomes are being written. Leases are short so that what a killed
runner held comes back quickly. Webhooks are at-least-once: a POST answered just
before a kill is sent again after the lease (with the same ``X-Service-Event-Id``), so
repeats are counted, never losses.
"""

from __future__ import annotations

import asyncio
import collections
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import func, select

from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.services.webhooks import _subscriptions as webhooks
from mailbridge.storage.database import Database
from mailbridge.storage.tables import ActivityEvent, WebhookDelivery
from tests.acceptance.test_delivery_crash import Target, target  # noqa: F401
from tests.webhook_receiver import Receiver, webhook_receiver

FIRST_EVENTS = 300
EVENTS_PER_RESTART = 40
KILLS = 6
CONCURRENCY = 16


def _context(settings: Settings) -> ServiceContext:
    allowed = settings.model_copy(update={"webhook_allow_private": True})
    return ServiceContext(allowed, Database.from_settings(allowed), SystemClock())


async def _seed(settings: Settings, endpoint: str) -> tuple[str, str]:
    """A team with a webhook for contact.created at ``endpoint``: (team id, secret)."""
    context = _context(settings)
    try:
        async with context.database.session() as session:
            team = await teams.create_team(session, context.clock, "crash", "pro")
            hook = await webhooks.create_webhook(
                session, context.clock, context.settings, team.id, endpoint, ["contact.created"]
            )
        return team.id, hook.secret
    finally:
        await context.database.dispose()


async def _record(settings: Settings, team_id: str, count: int) -> list[str]:
    context = _context(settings)
    try:
        async with context.database.session() as session:
            events = [
                record_event(session, context.clock, team_id, "contact.created", {"n": n})
                for n in range(count)
            ]
            await session.commit()
        return [event.id for event in events]
    finally:
        await context.database.dispose()


async def _state(settings: Settings) -> tuple[int, dict[str, int]]:
    """(undispatched events, deliveries by status)."""
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            waiting = await session.scalar(
                select(func.count()).where(ActivityEvent.dispatched_at.is_(None))
            )
            rows = await session.execute(
                select(WebhookDelivery.status, func.count()).group_by(WebhookDelivery.status)
            )
            return int(waiting or 0), {status: count for status, count in rows.tuples()}
    finally:
        await database.dispose()


async def _deliveries_per_event(settings: Settings) -> collections.Counter[str]:
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            rows = await session.scalars(select(WebhookDelivery.event_id))
            return collections.Counter(rows.all())
    finally:
        await database.dispose()


def _start(running: Target, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **running.env,
        "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true",
        "MAILBRIDGE_WEBHOOK_CONCURRENCY": str(CONCURRENCY),
        "MAILBRIDGE_WEBHOOK_BATCH_SIZE": "8",
        "MAILBRIDGE_WEBHOOK_TIMEOUT": "1",
        "MAILBRIDGE_WEBHOOK_LEASE_SECONDS": "2",
    }
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "mailbridge", "runner"],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


def _wait_for_requests(receiver: Receiver, count: int, runner: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while len(receiver.requests()) < count:
        assert runner.poll() is None, "the runner exited by itself"
        assert time.monotonic() < deadline, f"only {len(receiver.requests())} requests arrived"
        time.sleep(0.001)


def test_a_runner_killed_while_delivering_webhooks_loses_no_event(
    target: Target,  # noqa: F811
    tmp_path: Path,
) -> None:
    rng = random.Random()
    log = tmp_path / "runner.log"
    with webhook_receiver() as receiver:
        # A little work per request at the receiver, so that attempts overlap.
        receiver.delay = 0.005
        team_id, secret = asyncio.run(_seed(target.settings, receiver.url()))
        events = asyncio.run(_record(target.settings, team_id, FIRST_EVENTS))
        for _ in range(KILLS):
            before = len(receiver.requests())
            runner = _start(target, log)
            try:
                _wait_for_requests(receiver, before + rng.randint(5, 40), runner)
                events += asyncio.run(_record(target.settings, team_id, EVENTS_PER_RESTART))
                # Let the kill land at a random instant, not right after a request.
                time.sleep(rng.uniform(0, 0.02))
            finally:
                runner.send_signal(signal.SIGKILL)
                runner.wait(60)
        assert len(set(receiver.event_ids())) < len(events), "all went out before the last kill"

        runner = _start(target, log)
        try:
            deadline = time.monotonic() + 240
            done = (0, {"succeeded": len(events)})
            while (state := asyncio.run(_state(target.settings))) != done:
                assert runner.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, state
                time.sleep(0.25)
        finally:
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(60) == 0
        requests = receiver.requests()

    received = collections.Counter(request.event_id for request in requests)
    assert set(received) == set(events)  # no event lost
    # Repeats come only from kills, at most the attempts in flight at each.
    assert sum(received.values()) - len(events) <= KILLS * CONCURRENCY
    assert all(request.signed_with(secret) for request in requests)
    # The dispatcher handed each event out exactly once.
    assert asyncio.run(_deliveries_per_event(target.settings)) == {event: 1 for event in events}
    assert "Traceback" not in log.read_text()
