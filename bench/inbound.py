"""Inbound mail over SMTP into ``mailbridge inbound``, on SQLite: messages/s stored.

    .venv/bin/python -m bench.inbound [--messages 3000] [--clients 20] [--processes 1 2]

A fresh SQLite database with a team (plan "unlimited") and a verified receiving
domain; ``mailbridge inbound --listen 127.0.0.1:<port> --processes N`` as an operator
runs it, once with one process and once with one per core (N processes on one socket:
each one event loop is the limit of one). 20 aiosmtplib clients, one persistent
connection each, send the messages (~10 KB: a text part and a small PDF attachment,
each to its own address of the domain). DNS (the DKIM/DMARC lookups the listener
makes) is a local server (``tests.integration.dns_server``) publishing the sender
domain's DMARC record: what a caching resolver next to the listener answers, and no
network in the figures.
Printed: messages/s from the first send to the last 250 — each 250 means stored
(raw blobs fsynced, rows committed) — after checking there is one row a message.
Targets: >= 500 messages/s, and >= 30 % of the baseline.

The baseline, measured in the same run with the same clients and messages: a bare
aiosmtpd server in its own process whose ``handle_DATA`` only counts
(``bench.smtp_sink.SinkProcess("aiosmtpd")``) — what the SMTP conversation alone costs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

import aiosmtplib
from sqlalchemy import func, select

from bench.smtp_sink import SinkProcess, free_port
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services import accounts
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import ReceivedEmail
from tests.integration.dns_server import ThreadedDnsServer

DOMAIN = "inbox.shop.io"
SENDER = "ann@corp.io"
TARGET_RATE = 500
TARGET_SHARE = 0.30
STARTUP_TIMEOUT = 60.0


def messages(count: int) -> list[tuple[str, bytes]]:
    """``count`` distinct messages of ~10 KB, each with its recipient."""
    text = "A line of a longer message, as people write them.\n" * 80  # ~4 KB
    attachment = bytes(range(256)) * 18  # ~4.5 KB, ~6 KB in base64
    built = []
    for number in range(count):
        recipient = f"m{number}@{DOMAIN}"
        message = EmailMessage()
        message["From"] = f"Ann <{SENDER}>"
        message["To"] = recipient
        message["Subject"] = f"Order {number}"
        message["Message-ID"] = f"<bench-{number}@corp.io>"
        message.set_content(text)
        message.add_attachment(
            attachment, maintype="application", subtype="pdf", filename=f"quote{number}.pdf"
        )
        built.append((recipient, message.as_bytes()))
    return built


async def send_all(port: int, batch: list[tuple[str, bytes]], clients: int) -> float:
    """Seconds from the first send to the last 250, over ``clients`` persistent connections
    (opened before the clock starts)."""
    connections = [aiosmtplib.SMTP(hostname="127.0.0.1", port=port) for _ in range(clients)]
    await asyncio.gather(*(connection.connect() for connection in connections))
    queue = iter(batch)  # shared: one event loop, so no lock

    async def client(connection: aiosmtplib.SMTP) -> None:
        for recipient, content in queue:
            # Anything but 250 to DATA (or a refused recipient) raises.
            await connection.sendmail(SENDER, [recipient], content)

    try:
        started = time.perf_counter()
        await asyncio.gather(*(client(connection) for connection in connections))
        return time.perf_counter() - started
    finally:
        await asyncio.gather(*(connection.quit() for connection in connections))


async def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError("mailbridge inbound exited early")
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("mailbridge inbound did not start") from None
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return


async def _seed(context: ServiceContext) -> None:
    async with context.database.session() as session:
        team = await accounts.create_team(session, context.clock, "bench", "unlimited")
        await create_domain(
            session, context.clock, context.settings, team.id, DOMAIN,
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        await session.commit()


async def _stored(database: Database) -> int:
    async with database.session() as session:
        return int(await session.scalar(select(func.count()).select_from(ReceivedEmail)) or 0)


async def measure_mailbridge(
    batch: list[tuple[str, bytes]], clients: int, processes: int = 1
) -> float:
    """messages/s into ``mailbridge inbound --processes N`` on a fresh SQLite database."""
    dns_server = ThreadedDnsServer()
    dns_server.zone.add_txt(f"_dmarc.{SENDER.partition('@')[2]}", "v=DMARC1; p=none")
    dns_server.start()
    try:
        return await _measure_mailbridge(batch, clients, dns_server.address, processes)
    finally:
        dns_server.stop()


async def _measure_mailbridge(
    batch: list[tuple[str, bytes]], clients: int, nameserver: str, processes: int
) -> float:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder))
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
        try:
            await _seed(context)
            environment = {
                **{k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")},
                "MAILBRIDGE_DATA_DIR": folder,
                "MAILBRIDGE_DNS_NAMESERVER": nameserver,
            }
            port = free_port()
            listener = subprocess.Popen(
                [sys.executable, "-m", "mailbridge", "inbound", "--listen", f"127.0.0.1:{port}",
                 "--processes", str(processes)],
                env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await _wait_for_port(port, listener)
                elapsed = await send_all(port, batch, clients)
            finally:
                listener.send_signal(signal.SIGTERM)
                listener.wait(timeout=60)
            stored = await _stored(context.database)
            if stored != len(batch):
                raise RuntimeError(f"{stored} rows stored for {len(batch)} messages")
        finally:
            await context.database.dispose()
    return len(batch) / elapsed


async def measure_sink(batch: list[tuple[str, bytes]], clients: int) -> float:
    """messages/s into a bare aiosmtpd server that only counts."""
    sink = SinkProcess("aiosmtpd")
    sink.start()
    try:
        elapsed = await send_all(sink.port, batch, clients)
        if sink.received() != len(batch):
            raise RuntimeError(f"the sink counted {sink.received()} of {len(batch)} messages")
    finally:
        sink.stop()
    return len(batch) / elapsed


async def measure(
    count: int, clients: int, processes: list[int]
) -> tuple[list[float], float, float]:
    """mailbridge's messages/s for each process count, the baseline's, and the average
    message size in bytes."""
    batch = messages(count)
    size = sum(len(content) for _recipient, content in batch) / count
    rates = [await measure_mailbridge(batch, clients, each) for each in processes]
    baseline = await measure_sink(batch, clients)
    return rates, baseline, size


def report(
    count: int, clients: int, processes: list[int], rates: list[float], baseline: float,
    size: float,
) -> str:  # fmt: skip
    lines = [
        f"inbound SMTP, {count:,} messages of {size / 1024:.1f} KB, {clients} persistent "
        "aiosmtplib clients:",
    ]
    for each, rate in zip(processes, rates, strict=True):
        label = f"mailbridge inbound --processes {each} (SQLite, stored before 250):"
        lines.append(f"  {label:<60}{rate:7.0f} messages/s  ({rate / baseline:.0%} of baseline)")
    label = "baseline, bare aiosmtpd sink (one process, counts only):"
    lines.append(f"  {label:<60}{baseline:7.0f} messages/s")
    lines.append(f"  targets: >= {TARGET_RATE} messages/s; >= {TARGET_SHARE:.0%} of the baseline")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=3_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument(
        "--processes", type=int, nargs="+", default=sorted({1, os.cpu_count() or 1}),
        help="listener process counts to measure (default: 1 and one per core)",
    )  # fmt: skip
    arguments = parser.parse_args()
    rates, baseline, size = asyncio.run(
        measure(arguments.messages, arguments.clients, arguments.processes)
    )
    print(report(arguments.messages, arguments.clients, arguments.processes, rates, baseline, size))


if __name__ == "__main__":
    main()
