"""``mailbridge inbound`` SIGKILLed again and again while a client sends it mail: every
message the client saw acknowledged with 250 is stored exactly once.

The client sends 2,000 distinct messages (each its own Message-ID and recipient) over
a few connections, and sends again every message that did not get its 250 (refused
or reset connection, timeout, a 4xx) after a short pause, as an MTA does. The
listener is killed at random instants, 0.5 to 2 s after it came up, then started
again; the last one is left running until every message is acknowledged, then
stopped with SIGTERM. A message stored but killed before its 250 reached the client
is sent again: stored twice, unless the listener recognizes it.
"""

from __future__ import annotations

import asyncio
import collections
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import aiosmtplib
import pytest
from sqlalchemy import func, select

from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services import accounts
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import ReceivedEmail
from tests.acceptance.conftest import free_port
from tests.acceptance.test_delivery_crash import Target, target
from tests.integration.dns_server import ThreadedDnsServer

pytestmark = pytest.mark.acceptance
__all__ = ["target"]

MESSAGES = 2_000
KILLS = 5
SENDERS = 4  # connections: several messages in flight when a kill lands
DOMAIN = "inbox.shop.io"
SENDER = "ann@corp.io"
RETRY_PAUSE = 0.1
STARTUP_TIMEOUT = 120.0
DEADLINE = 300.0  # seconds for the whole exchange, six start-ups included


@pytest.fixture
def dns_server() -> Iterator[ThreadedDnsServer]:
    """The listener's DKIM/DMARC lookups answered on loopback, not by the network."""
    server = ThreadedDnsServer()
    server.zone.add_txt("_dmarc.corp.io", "v=DMARC1; p=none")
    server.start()
    yield server
    server.stop()


def message_id_of(number: int) -> str:
    return f"<crash-{number}@corp.io>"


def message(number: int) -> tuple[str, str, bytes]:
    """The ``number``th message: its Message-ID, recipient and bytes."""
    message_id = message_id_of(number)
    recipient = f"m{number}@{DOMAIN}"
    built = EmailMessage()
    built["From"] = f"Ann <{SENDER}>"
    built["To"] = recipient
    built["Subject"] = f"Order {number}"
    built["Message-ID"] = message_id
    built.set_content(f"Message {number}.\n" + "Some words.\n" * 40)
    built.add_attachment(
        bytes(range(256)) * 4, maintype="application", subtype="pdf", filename="quote.pdf"
    )
    return message_id, recipient, built.as_bytes()


async def _seed(settings: Settings) -> None:
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    try:
        async with context.database.session() as session:
            team = await accounts.create_team(session, context.clock, "crash", "unlimited")
            await create_domain(
                session, context.clock, settings, team.id, DOMAIN,
                DomainOptions(receiving=True), verified=True,
            )  # fmt: skip
            await session.commit()
    finally:
        await context.database.dispose()


async def _stored(settings: Settings) -> collections.Counter[str | None]:
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            rows = await session.execute(
                select(ReceivedEmail.message_id, func.count()).group_by(ReceivedEmail.message_id)
            )
            return collections.Counter({message_id: count for message_id, count in rows.tuples()})
    finally:
        await database.dispose()


class Listener:
    """``mailbridge inbound`` on one port, started again and again; its output in ``log``."""

    def __init__(self, env: dict[str, str], log: Path, processes: int = 1) -> None:
        self.env = env
        self.log = log
        self.processes = processes
        self.port = free_port()
        self.starts = 0
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as handle:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mailbridge", "inbound", "--listen",
                 f"127.0.0.1:{self.port}", "--processes", str(self.processes)],
                env=self.env, stdout=handle, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.starts += 1
        # Up when it says so (no probe connection: the senders are the only clients).
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while self.log.read_text().count("receiving mail on") < self.starts * self.processes:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "mailbridge inbound did not start"
            await asyncio.sleep(0.05)
        return self.process

    async def kill(self) -> None:
        assert self.process is not None and self.process.poll() is None, "it exited by itself"
        self.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(self.process.wait, 60)


class Client:
    """Sends each message until it is acknowledged with 250; counts what it saw."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.pending = collections.deque(range(MESSAGES))
        self.acknowledged: collections.Counter[str] = collections.Counter()
        self.attempts = 0
        self.refused: list[tuple[int, str]] = []

    async def sender(self) -> None:
        connection: aiosmtplib.SMTP | None = None
        while self.pending:
            number = self.pending.popleft()
            message_id, recipient, content = message(number)
            while True:
                self.attempts += 1
                try:
                    if connection is None or not connection.is_connected:
                        connection = aiosmtplib.SMTP(hostname="127.0.0.1", port=self.port)
                        await connection.connect(timeout=5)
                    await connection.sendmail(SENDER, [recipient], content, timeout=5)
                except aiosmtplib.SMTPRecipientsRefused as error:
                    if any(item.code >= 500 for item in error.recipients):
                        self.refused.append((number, str(error.recipients)))
                        break
                except aiosmtplib.SMTPResponseException as error:
                    if error.code >= 500:  # a permanent refusal: nothing to retry
                        self.refused.append((number, str(error)))
                        break
                except (aiosmtplib.SMTPException, OSError, TimeoutError):
                    pass  # refused, reset, timed out: the message was not acknowledged
                else:
                    self.acknowledged[message_id] += 1
                    break
                if connection is not None:
                    connection.close()
                    connection = None
                await asyncio.sleep(RETRY_PAUSE)
        if connection is not None and connection.is_connected:
            await connection.quit()


async def _exchange(listener: Listener, rng: random.Random) -> tuple[Client, int]:
    """The client against killed listeners, then one left running until every message is
    acknowledged; the client, and how many were acknowledged at the last kill."""
    client = Client(listener.port)
    senders = [asyncio.create_task(client.sender()) for _ in range(SENDERS)]
    deadline = time.monotonic() + DEADLINE
    try:
        for _ in range(KILLS):
            await listener.start()
            # Killed after a random number of messages more got through (not after a
            # time: a faster listener would finish them all before the last kill), at a
            # random instant after that.
            target = sum(client.acknowledged.values()) + rng.randint(
                MESSAGES // (KILLS * 4), MESSAGES // (KILLS + 1)
            )
            while sum(client.acknowledged.values()) < target:
                assert time.monotonic() < deadline, "the listener stopped acknowledging"
                await asyncio.sleep(0.005)
            await asyncio.sleep(rng.uniform(0, 0.05))
            await listener.kill()
        at_last_kill = sum(client.acknowledged.values())
        await listener.start()
        await asyncio.wait_for(asyncio.gather(*senders), deadline - time.monotonic())
    finally:
        for task in senders:
            task.cancel()
    return client, at_last_kill


@pytest.mark.parametrize("processes", [1, 2])
def test_a_listener_killed_while_receiving_stores_each_acknowledged_message_once(
    target: Target, dns_server: ThreadedDnsServer, tmp_path: Path, processes: int
) -> None:
    """With ``--processes 2`` the kill is the parent's: its fork dies with it."""
    asyncio.run(_seed(target.settings))
    log = tmp_path / "inbound.log"
    environment = {**target.env, "MAILBRIDGE_DNS_NAMESERVER": dns_server.address}
    listener = Listener(environment, log, processes)
    exit_code = None
    try:
        client, at_last_kill = asyncio.run(_exchange(listener, random.Random()))
    finally:
        if listener.process is not None and listener.process.poll() is None:
            listener.process.send_signal(signal.SIGTERM)
            exit_code = listener.process.wait(60)
    assert exit_code == 0, log.read_text()[-3000:]

    assert client.refused == []
    assert 0 < at_last_kill < MESSAGES, "the kills did not land while messages were sent"
    every = {message_id_of(number): 1 for number in range(MESSAGES)}
    assert client.acknowledged == every
    stored = asyncio.run(_stored(target.settings))
    twice = {message_id: count for message_id, count in stored.items() if count > 1}
    assert not twice, (
        f"{len(twice)} messages stored more than once (stored, then killed before the 250 "
        f"reached the client, which sent them again): {sorted(map(str, twice))[:10]}"
    )
    assert stored == every
    assert "Traceback" not in log.read_text()
