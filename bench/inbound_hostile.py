"""/health latency of ``mailbridge serve`` while hostile mail arrives over SMTP.

    .venv/bin/python -m bench.inbound_hostile [--messages 20] [--depth 2000]

``mailbridge serve`` (API, runner and SMTP listener on one event loop) on a fresh
SQLite database with a team and a verified receiving domain; DNS (the listener's
DMARC lookups) from a local server. An httpx client polls ``GET /health`` every 10 ms:
for two seconds with no mail (the baseline), then while ``--messages`` messages nested
``--depth`` multiparts deep (``tests.mime_samples.nested``: ~100 KB each, over a second
of CPU each for the standard library's parser) are sent at once, one aiosmtplib
connection each, from a process of their own (the sender's work never delays the
poller) — twice: first to a listener that has parsed nothing yet (its parse workers
start then), then to one that has. Each message must be answered 250 and stored with
``parse_error`` "nesting too deep". Printed: the /health latencies of each phase
(median, 99th percentile, max) and the seconds until the last 250. Target (DESIGN §9,
the issue): max /health latency under 100 ms while the messages arrive.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from concurrent.futures import Executor, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar

import aiosmtplib
import httpx
from sqlalchemy import select

from bench.smtp_sink import free_port
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services import accounts
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import ReceivedEmail
from tests.integration.dns_server import ThreadedDnsServer
from tests.mime_samples import nested

TARGET = 0.100  # seconds: the longest /health answer while the messages arrive
BASELINE_SECONDS = 2.0
STARTUP_TIMEOUT = 60.0
UA = {"User-Agent": "bench/1.0"}
T = TypeVar("T")
Phase = tuple[str, list[float], float | None]  # label, /health latencies, seconds to send


async def _seed(context: ServiceContext) -> None:
    async with context.database.session() as session:
        team = await accounts.create_team(session, context.clock, "bench", "unlimited")
        await create_domain(
            session, context.clock, context.settings, team.id, "shop.io",
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        await session.commit()


async def _wait_until_up(http: httpx.AsyncClient, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("mailbridge serve exited early")
        try:
            if (await http.get("/health")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("mailbridge serve did not start")


async def _poll(http: httpx.AsyncClient, until: asyncio.Event) -> list[float]:
    latencies = []
    while not until.is_set():
        started = time.perf_counter()
        answer = await http.get("/health")
        latencies.append(time.perf_counter() - started)
        if answer.status_code != 200:
            raise RuntimeError(f"/health answered {answer.status_code}")
        await asyncio.sleep(0.01)
    return latencies


async def _phase(http: httpx.AsyncClient, work: Awaitable[T]) -> tuple[list[float], T]:
    """/health latencies while ``work`` runs, and its result."""
    until = asyncio.Event()
    polling = asyncio.create_task(_poll(http, until))
    try:
        result = await work
    finally:
        until.set()
    return await polling, result


async def _send_all(smtp_port: int, messages: list[bytes]) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(
        aiosmtplib.send(
            raw, hostname="127.0.0.1", port=smtp_port, sender="ann@corp.io",
            recipients=["hello@shop.io"], timeout=300,
        )
        for raw in messages
    ))  # fmt: skip
    return time.perf_counter() - started


def send_all(smtp_port: int, first: int, count: int, depth: int) -> float:
    """Seconds from the first send to the last 250 (in the sender's process)."""
    messages = [nested(depth, f"deep {number}") for number in range(first, first + count)]
    return asyncio.run(_send_all(smtp_port, messages))


async def _rounds(
    http: httpx.AsyncClient, sender: Executor, smtp_port: int, count: int, depth: int
) -> list[Phase]:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(sender, int)  # the sender's process started, off the clock
    quiet, _ = await _phase(http, asyncio.sleep(BASELINE_SECONDS))
    phases: list[Phase] = [("no mail", quiet, None)]
    for number, label in enumerate(("arriving, first", "arriving, again")):
        sending = loop.run_in_executor(sender, send_all, smtp_port, number * count, count, depth)
        latencies, elapsed = await _phase(http, sending)
        phases.append((label, latencies, elapsed))
    return phases


async def _check_stored(database: Database, count: int) -> None:
    async with database.session() as session:
        errors = list(await session.scalars(select(ReceivedEmail.parse_error)))
    if len(errors) != count or set(errors) != {"nesting too deep"}:
        raise RuntimeError(f"stored {len(errors)} of {count}; parse errors {set(errors)}")


async def measure(count: int, depth: int) -> list[Phase]:
    dns = ThreadedDnsServer()
    dns.zone.add_txt("_dmarc.corp.io", "v=DMARC1; p=none")
    dns.start()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder))
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
        http_port, smtp_port = free_port(), free_port()
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")},
            "MAILBRIDGE_DATA_DIR": folder, "MAILBRIDGE_DNS_NAMESERVER": dns.address,
            "MAILBRIDGE_INBOUND_SMTP": f"127.0.0.1:{smtp_port}", "MAILBRIDGE_LOG_LEVEL": "warning",
        }  # fmt: skip
        server = None
        try:
            await _seed(context)
            server = subprocess.Popen(
                [sys.executable, "-m", "mailbridge", "serve", "--port", str(http_port)],
                env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{http_port}", headers=UA, timeout=60
            ) as http:
                await _wait_until_up(http, server)
                with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as sender:
                    phases = await _rounds(http, sender, smtp_port, count, depth)
            await _check_stored(context.database, 2 * count)
        finally:
            if server is not None:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)
            await context.database.dispose()
            dns.stop()
    return phases


def _figures(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"median {statistics.median(ordered) * 1000:6.1f} ms, p99 {p99 * 1000:6.1f} ms, "
        f"max {ordered[-1] * 1000:6.1f} ms ({len(ordered)} requests)"
    )


def report(count: int, depth: int, phases: list[Phase]) -> str:
    size = len(nested(depth, "deep 0")) / 1024
    lines = [
        f"mailbridge serve (SQLite), GET /health every 10 ms; {count} messages nested "
        f"{depth} deep (~{size:.0f} KB) sent at once, twice:",
    ]
    for label, latencies, elapsed in phases:
        stored = f"; all stored (250) in {elapsed:.2f} s" if elapsed is not None else ""
        lines.append(f"  {label + ':':<18}{_figures(latencies)}{stored}")
    worst = max(max(latencies) for _label, latencies, elapsed in phases if elapsed is not None)
    verdict = "met" if worst < TARGET else "NOT met"
    lines.append(
        f"  target: max /health latency < {TARGET * 1000:.0f} ms while they arrive: {verdict}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--depth", type=int, default=2000)
    arguments = parser.parse_args()
    phases = asyncio.run(measure(arguments.messages, arguments.depth))
    print(report(arguments.messages, arguments.depth, phases))


if __name__ == "__main__":
    main()
