"""A runner SIGKILLed again and again while delivering: every email still reaches each
of its recipients exactly once, and ends ``delivered``.

One email in five has a second recipient the listener defers (450) the first time: the
first recipient has the email at once, in an envelope of its own, and the deferred one
once after its retry (the backoff is cut short by moving the retry's time forward).

The listener is a real aiosmtpd server in this process; the runner is the real
``mailbridge runner`` in a subprocess, pointed at it with ``MAILBRIDGE_SMTP_URL``.
Each run is killed after a random number of messages got through (so kills land in
every phase of a delivery: envelope, content, the handover commit, the reply), then
started again; a last run finishes the work. Leases are short so that what a killed
runner held comes back quickly. The listener, like a real MTA and unlike stock
aiosmtpd, keeps a message whose terminator arrived just before the client vanished
(``tests.smtp_listener.CompletingSMTP``).
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import func, select, update

from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Email
from tests.integration.conftest import POSTGRES_URL
from tests.integration.email_factory import add_domain, add_email
from tests.smtp_listener import Listener, smtp_listener

EMAILS = 500
MIXED_EVERY = 5  # every fifth email also goes to a recipient deferred once
KILLS = 6
LEASE_SECONDS = 2


@dataclass
class Target:
    settings: Settings
    env: dict[str, str]


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env["MAILBRIDGE_DATA_DIR"] = str(tmp_path / "var")
    schema = None
    if request.param == "postgresql":
        schema = f"mb_crash_{uuid.uuid4().hex[:10]}"
        asyncio.run(_execute(f'CREATE SCHEMA "{schema}"'))
        env["MAILBRIDGE_DATABASE_URL"] = POSTGRES_URL
        env["MAILBRIDGE_DATABASE_SCHEMA"] = schema
    settings = Settings(
        data_dir=tmp_path / "var",
        database_url=env.get("MAILBRIDGE_DATABASE_URL"),
        database_schema=schema,
    )
    upgrade(settings.resolved_database_url, settings.database_schema)
    try:
        yield Target(settings, env)
    finally:
        if schema is not None:
            asyncio.run(_execute(f'DROP SCHEMA "{schema}" CASCADE'))


async def _execute(sql: str) -> None:
    connection = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg", "postgresql"))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def _recipients(n: int) -> list[str]:
    first = f"customer{n}@mail.net"
    return [first, f"deferred{n}@mail.net"] if n % MIXED_EVERY == 0 else [first]


async def _seed(settings: Settings, count: int) -> dict[tuple[str, str], int]:
    """The emails; one copy expected for each (message id, recipient)."""
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    expected = {}
    try:
        async with context.database.session() as session:
            team = await teams.create_team(session, context.clock, "crash", "pro")
            await session.commit()
        domain = await add_domain(context, team.id)
        for n in range(count):
            email = await add_email(context, domain, to=_recipients(n))
            expected.update({(email.message_id, each): 1 for each in _recipients(n)})
        return expected
    finally:
        await context.database.dispose()


async def _retry_now(settings: Settings) -> None:
    """The backoff of deferred recipients over: their emails due now."""
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            await session.execute(
                update(Email)
                .where(Email.status == "delivery_delayed", Email.lease_owner.is_(None))
                .values(due_at=datetime.now(UTC))
            )
            await session.commit()
    finally:
        await database.dispose()


async def _statuses(settings: Settings) -> dict[str, int]:
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            rows = await session.execute(select(Email.status, func.count()).group_by(Email.status))
            return {status: count for status, count in rows.tuples()}
    finally:
        await database.dispose()


def _start(target: Target, listener: Listener, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **target.env,
        "MAILBRIDGE_SMTP_URL": listener.url,
        "MAILBRIDGE_SMTP_POOL_SIZE": "4",
        "MAILBRIDGE_DELIVERY_CONCURRENCY": "16",
        "MAILBRIDGE_DELIVERY_BATCH_SIZE": "8",
        "MAILBRIDGE_DELIVERY_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "mailbridge", "runner"],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


def _wait_for_messages(listener: Listener, count: int, runner: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while len(listener.messages()) < count:
        assert runner.poll() is None, "the runner exited by itself"
        assert time.monotonic() < deadline, f"only {len(listener.messages())} messages arrived"
        time.sleep(0.001)


@pytest.mark.parametrize("pipelining", [False, True], ids=["one-command-at-a-time", "pipelining"])
def test_a_runner_killed_while_delivering_delivers_each_email_exactly_once(
    target: Target, tmp_path: Path, pipelining: bool
) -> None:
    expected = asyncio.run(_seed(target.settings, EMAILS))
    rng = random.Random()
    log = tmp_path / "runner.log"
    with smtp_listener(pipelining=pipelining) as listener:
        # A little work per message at the relay, so that deliveries overlap.
        listener.handler.data_delay = 0.005
        for n in range(0, EMAILS, MIXED_EVERY):
            listener.handler.refuse_rcpt(f"deferred{n}@mail.net", "450 4.2.1 try again later")
        for _ in range(KILLS):
            before = len(listener.messages())
            runner = _start(target, listener, log)
            try:
                _wait_for_messages(listener, before + rng.randint(5, 40), runner)
                # Let the kill land at a random instant, not right after a message.
                time.sleep(rng.uniform(0, 0.02))
            finally:
                runner.send_signal(signal.SIGKILL)
                runner.wait(60)
        assert len(listener.messages()) < EMAILS, "every email went out before the last kill"

        runner = _start(target, listener, log)
        try:
            deadline = time.monotonic() + 240
            while asyncio.run(_statuses(target.settings)) != {"delivered": EMAILS}:
                assert runner.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, asyncio.run(_statuses(target.settings))
                asyncio.run(_retry_now(target.settings))
                time.sleep(0.25)
        finally:
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(60) == 0
        received = collections.Counter(
            (message.message_id, recipient)
            for message in listener.messages()
            for recipient in message.rcpt_tos
        )
    assert all(len(message.rcpt_tos) == 1 for message in listener.messages())

    assert received == expected
    assert "Traceback" not in log.read_text()
