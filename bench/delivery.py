"""Delivered messages/s to a local SMTP sink, DKIM signing on, SQLite; and a baseline.

    .venv/bin/python -m bench.delivery [--emails 3000] [--pool 32] [--concurrency 96]
                                       [--sink minimal|aiosmtpd]

Seeds N due emails (as POST /emails leaves them) on a domain with a DKIM key in a
fresh SQLite database, starts an SMTP sink on loopback in a process of its own
(``bench.smtp_sink``), and times the delivery worker — as ``mailbridge runner`` runs
it, opened (its rendering process started) — from the start of its loop until the
sink has every message and every row is ``delivered``
(composed, DKIM-signed, handed over with the exactly-once protocol, receipts filed,
events recorded). The baseline, measured in the same run against the same sink: the
same emails composed and signed the same way and sent with plain
``aiosmtplib.send`` — one connection per message, no database, same concurrency.
Target on a 2-core machine: >= 1,000 delivered/s.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import aiosmtplib
from sqlalchemy import func, insert, select

from bench.smtp_sink import SinkProcess
from mailbridge.cli.main import event_loop_runner
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.mail import dkim
from mailbridge.mail.compose import compose
from mailbridge.runner.delivery import DeliveryWorker, default_render_processes
from mailbridge.services import accounts, domains
from mailbridge.services.context import ServiceContext
from mailbridge.services.email import envelope_sender
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Domain, Email, EmailEvent
from mailbridge.storage.types import new_id

HTML = "<html><body><h1>Your receipt</h1>" + "<p>Thanks for your order.</p>" * 20 + "</body></html>"
TEXT = "Your receipt\n\n" + "Thanks for your order.\n" * 20


@dataclass(frozen=True)
class Figures:
    emails: int
    delivered_per_second: float
    baseline_per_second: float
    journal_commits: int
    sink: str

    @property
    def ratio(self) -> float:
        return self.delivered_per_second / self.baseline_per_second


async def seed(context: ServiceContext, count: int) -> tuple[Domain, list[Email]]:
    clock = context.clock
    async with context.database.session() as session:
        team = await accounts.create_team(session, clock, "bench", "pro")
        domain = await domains.create_domain(
            session, clock, context.settings, team.id, "shop.io", verified=True
        )
        await session.commit()
    now = clock.now()
    rows = []
    for number in range(count):
        email_id = new_id()
        rows.append({
            "id": email_id, "team_id": team.id, "domain_id": domain.id,
            "from_address": "Shop <receipts@shop.io>", "from_email": "receipts@shop.io",
            "to": [f"customer{number}@mail.net"], "cc": [], "bcc": [], "reply_to": [],
            "delivery_recipients": [f"customer{number}@mail.net"],
            "recipients_text": f"\ncustomer{number}@mail.net\n",
            "subject": f"Receipt #{number}", "html": HTML, "text": TEXT, "headers": {},
            "tags": [], "marketing": False, "status": "queued", "last_event": "queued",
            "due_at": now, "attempts": 0, "message_id": f"<{email_id}@shop.io>",
            "created_at": now, "updated_at": now,
        })  # fmt: skip
    async with context.database.session() as session:
        await session.execute(insert(Email), rows)
        await session.execute(
            insert(EmailEvent),
            [
                {"id": new_id(), "email_id": row["id"], "team_id": team.id, "type": "queued",
                 "data": {}, "created_at": now}
                for row in rows
            ],
        )  # fmt: skip
        await session.commit()
        emails = list((await session.scalars(select(Email))).all())
    return domain, emails


async def run_worker(context: ServiceContext, sink: SinkProcess, count: int) -> tuple[float, int]:
    # As `mailbridge runner` builds it (runner.default_workers).
    worker = DeliveryWorker(context, render_processes=default_render_processes())
    stopping = asyncio.Event()
    # Opened first, as a runner is long before mail comes: starting the rendering process
    # (a second or so of imports) is not part of the delivery rate.
    await worker.open()
    started = time.perf_counter()
    task = asyncio.create_task(worker.run(stopping))
    await sink.wait_for(count)
    while True:
        async with context.database.session() as session:
            delivered = await session.scalar(
                select(func.count()).select_from(Email).where(Email.status == "delivered")
            )
        if delivered == count:
            break
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - started
    commits = worker.journal.commits
    stopping.set()
    await task
    return elapsed, commits


async def run_baseline(
    context: ServiceContext,
    sink: SinkProcess,
    domain: Domain,
    emails: list[Email],
    concurrency: int,
) -> float:
    """compose + DKIM + aiosmtplib.send, one connection per message."""
    already = sink.received()
    queue: asyncio.Queue[Email] = asyncio.Queue()
    for email in emails:
        queue.put_nowait(email)

    async def sender() -> None:
        while not queue.empty():
            email = queue.get_nowait()
            message = compose(email, date=context.clock.now())
            message = dkim.sign(message, domain.name, domain.dkim_selector, domain.dkim_private_key)
            await aiosmtplib.send(
                message,
                sender=envelope_sender(email, domain),
                recipients=email.delivery_recipients,
                hostname="127.0.0.1",
                port=sink.port,
                local_hostname="bench.local",
                start_tls=False,
            )

    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    await sink.wait_for(already + len(emails))
    return time.perf_counter() - started


async def measure(
    emails: int = 3000,
    pool: int = 32,
    concurrency: int = 96,
    batch: int = 200,
    sink_kind: str = "minimal",
) -> Figures:
    with tempfile.TemporaryDirectory() as directory:
        sink = SinkProcess(sink_kind)
        sink.start()
        try:
            settings = Settings(
                data_dir=Path(directory),
                smtp_url=sink.url,
                smtp_pool_size=pool,
                delivery_concurrency=concurrency,
                delivery_batch_size=batch,
                delivery_lease_seconds=timedelta(minutes=5).total_seconds(),
            )
            await asyncio.to_thread(upgrade, settings.resolved_database_url)
            context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
            try:
                domain, rows = await seed(context, emails)
                elapsed, commits = await run_worker(context, sink, emails)
                baseline = await run_baseline(context, sink, domain, rows, concurrency)
            finally:
                await context.database.dispose()
        finally:
            sink.stop()
    return Figures(emails, emails / elapsed, emails / baseline, commits, sink_kind)


def report(figures: Figures) -> str:
    return "\n".join([
        f"delivery to a local SMTP sink ({figures.sink}), {figures.emails} emails, DKIM on, "
        "SQLite:",
        f"  mailbridge runner   {figures.delivered_per_second:8.0f} delivered/s"
        f"   ({figures.journal_commits} journal commits)",
        f"  baseline            {figures.baseline_per_second:8.0f} sent/s"
        "   (aiosmtplib.send, a connection per message, no database)",
        f"  ratio               {figures.ratio:8.2f}x   (target: >= 1,000 delivered/s)",
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--emails", type=int, default=3000)
    parser.add_argument("--pool", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=96)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--sink", choices=["minimal", "aiosmtpd"], default="minimal")
    arguments = parser.parse_args()
    with event_loop_runner() as runner:  # the loop `mailbridge runner` runs on
        figures = runner.run(
            measure(
                arguments.emails, arguments.pool, arguments.concurrency, arguments.batch,
                arguments.sink,
            )
        )  # fmt: skip
    print(report(figures))


if __name__ == "__main__":
    main()
