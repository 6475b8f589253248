"""Delivered messages/s to a local SMTP sink, DKIM signing on, SQLite: the whole delivery
pipeline with the hand-written DKIM signer and with the library it replaces; a baseline.

    .venv/bin/python -m bench.delivery [--emails 10000] [--rounds 3] [--pool 32]
                                       [--concurrency 96] [--sink minimal|aiosmtpd]
                                       [--shipped-only]

For each variant, seeds N due emails (as POST /emails leaves them) on a domain with a
DKIM key in a fresh SQLite database, and times the delivery worker — as ``mailbridge
runner`` runs it, opened (its rendering process started) — from the start of its loop
until an SMTP sink on loopback, in a process of its own (``bench.smtp_sink``), has every
message and every row is ``delivered`` (claimed, composed, DKIM-signed, handed over with
the exactly-once protocol, receipts filed, events recorded). The variants, side by side
in one invocation (``rendering.RenderPaths``, a switch of the worker only this bench
uses), judge the hand-written signer by the project's rule — kept only where it is at
least 1.5x its library end to end:

    (a) mail/dkim.py: what ships
    (b) dkimpy's dkim.sign

(mail/compose.py's own MIME writer was judged the same way and replaced by
``BytesGenerator``: docs/decisions.md.)

The baseline, measured in the same run against the same sink, is the fastest plain
client: the same messages (composed and signed as mailbridge ships them, before the
clock starts) sent with aiosmtplib over one persistent ``aiosmtplib.SMTP`` connection
per concurrent worker, reused for all its messages (no database, same concurrency).
The sink offers PIPELINING, as real relays do: mailbridge sends each envelope and
DATA in one write (``bench.pipelining`` weighs that against one command at a time);
aiosmtplib does not pipeline.
Runs are 10,000 emails long (~4 s of delivering: at 3,000 the pipeline's fill and
drain were a noticeable part of a 1.2 s run). What ships and the baseline run
``--rounds`` times, one after the other (the machine's
speed drifts by ±10 % over a minute here, and a single pair of runs inherits all of
it); the library variant runs once. Printed: each round's rates, ratio and CPU time a
message of every process (the runner, its rendering process, the sink; the baseline's
client and the sink); delivered/s for each variant, the hand-written/library ratio,
and mailbridge (a) as a percentage of the baseline — the median of the rounds'
ratios. Targets on a 2-core machine: >= 1,000 delivered/s, and mailbridge >= 40 % of
the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import aiosmtplib
from sqlalchemy import func, insert, select

from bench.cpu import CpuMeter, per_message, spawned_children
from bench.smtp_sink import SinkProcess
from mailbridge.cli.main import event_loop_runner, settle_heap
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.mail.rendering import SHIPPED, RenderJob, RenderPaths, SigningKey, render
from mailbridge.runner.delivery import DeliveryWorker, default_render_processes
from mailbridge.services import accounts, domains
from mailbridge.services.delivery import envelope_sender
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Domain, Email, EmailEvent
from mailbridge.storage.types import new_id

HTML = "<html><body><h1>Your receipt</h1>" + "<p>Thanks for your order.</p>" * 20 + "</body></html>"
TEXT = "Your receipt\n\n" + "Thanks for your order.\n" * 20

# The whole pipeline with each hand-written module and with the library it replaces.
VARIANTS = {
    "(a) hand-written DKIM (mail/dkim.py)": SHIPPED,
    "(b) dkimpy dkim.sign": RenderPaths(hand_written_dkim=False),
}
# Each module judged on its own: the shipped pipeline against the one with only that
# module replaced by its library.
JUDGED = {"mail/dkim.py": RenderPaths(hand_written_dkim=False)}
RULE = 1.5  # a hand-written module stays only at >= 1.5x its library end to end
TARGET_RATE = 1000  # delivered/s
TARGET_SHARE = 0.40  # of the baseline


@dataclass(frozen=True)
class Run:
    name: str
    paths: RenderPaths
    delivered_per_second: float
    journal_commits: int
    cpu: dict[str, float]  # CPU seconds of each process over the run


@dataclass(frozen=True)
class Round:
    """What ships, then the baseline, one right after the other."""

    shipped: Run
    baseline_per_second: float
    baseline_cpu: dict[str, float]

    @property
    def share(self) -> float:
        return self.shipped.delivered_per_second / self.baseline_per_second


@dataclass(frozen=True)
class Figures:
    emails: int
    rounds: list[Round]
    others: list[Run]  # the library variants, once each
    connections: int
    sink: str

    def rate(self, paths: RenderPaths) -> float | None:
        if paths == SHIPPED:
            return self.delivered_per_second
        return next((run.delivered_per_second for run in self.others if run.paths == paths), None)

    @property
    def delivered_per_second(self) -> float:
        """What ships: the hand-written paths (the median of the rounds)."""
        return statistics.median(r.shipped.delivered_per_second for r in self.rounds)

    @property
    def baseline_per_second(self) -> float:
        return statistics.median(r.baseline_per_second for r in self.rounds)

    @property
    def share(self) -> float:
        """mailbridge (as it ships) / the baseline: the median of the rounds' ratios."""
        return statistics.median(r.share for r in self.rounds)


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


async def run_worker(
    context: ServiceContext, sink: SinkProcess, count: int, paths: RenderPaths
) -> tuple[float, int, dict[str, float]]:
    # As `mailbridge runner` builds it (runner.default_workers), composing and signing
    # by ``paths``.
    worker = DeliveryWorker(
        context, render_processes=default_render_processes(), render_paths=paths
    )
    stopping = asyncio.Event()
    already = sink.received()
    # As `mailbridge runner` starts: what exists now (here: the seeded rows, which a real
    # runner never holds) is frozen out of the garbage collector's sight.
    settle_heap()
    # Opened first, as a runner is long before mail comes: starting the rendering process
    # (a second or so of imports) is not part of the delivery rate.
    await worker.open()
    rendering = [pid for pid in spawned_children(os.getpid()) if pid != sink.pid]
    meter = CpuMeter({
        "runner": os.getpid(),
        **{"rendering" + (f" {n + 1}" if len(rendering) > 1 else ""): pid
           for n, pid in enumerate(rendering)},
        "sink": sink.pid or 0,
    })  # fmt: skip
    meter.start()
    started = time.perf_counter()
    task = asyncio.create_task(worker.run(stopping))
    await sink.wait_for(already + count)
    while True:
        async with context.database.session() as session:
            delivered = await session.scalar(
                select(func.count()).select_from(Email).where(Email.status == "delivered")
            )
        if delivered == count:
            break
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - started
    cpu = meter.stop()
    commits = worker.journal.commits
    stopping.set()
    await task
    return elapsed, commits, cpu


async def run_baseline(
    context: ServiceContext,
    sink: SinkProcess,
    domain: Domain,
    emails: list[Email],
    concurrency: int,
) -> tuple[float, dict[str, float]]:
    """The fastest plain client: the same messages — composed and signed as mailbridge
    ships them, before the clock starts — sent with aiosmtplib over one persistent
    connection per concurrent worker, reused for all its messages."""
    key = SigningKey(domain.name, domain.dkim_selector, domain.dkim_private_key)
    queue: asyncio.Queue[tuple[str, list[str], bytes]] = asyncio.Queue()
    for email in emails:
        message = render(RenderJob.of(email, date=context.clock.now(), signing_key=key))
        queue.put_nowait(
            (envelope_sender(email, domain, b"bench"), email.delivery_recipients, message)
        )
    already = sink.received()
    connections: list[aiosmtplib.SMTP] = []

    async def sender() -> None:
        smtp = aiosmtplib.SMTP(
            hostname="127.0.0.1", port=sink.port, local_hostname="bench.local", start_tls=False
        )
        connections.append(smtp)
        await smtp.connect()
        while not queue.empty():
            envelope_from, recipients, message = queue.get_nowait()
            await smtp.sendmail(envelope_from, recipients, message)

    meter = CpuMeter({"client": os.getpid(), "sink": sink.pid or 0})
    meter.start()
    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    await sink.wait_for(already + len(emails))
    elapsed = time.perf_counter() - started
    cpu = meter.stop()
    await asyncio.gather(*(smtp.quit() for smtp in connections), return_exceptions=True)
    return elapsed, cpu


async def measure(
    emails: int = 10000,
    pool: int = 32,
    concurrency: int = 96,
    batch: int = 200,
    sink_kind: str = "minimal",
    variants: dict[str, RenderPaths] | None = None,
    rounds: int = 3,
) -> Figures:
    variants = VARIANTS if variants is None else variants
    sink = SinkProcess(sink_kind)
    sink.start()

    async def one(name: str, paths: RenderPaths, baseline: bool) -> tuple[Run, Round | None]:
        # A fresh database each: every run starts from the same state.
        gc.collect()
        with tempfile.TemporaryDirectory() as directory:
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
                elapsed, commits, cpu = await run_worker(context, sink, emails, paths)
                run = Run(name, paths, emails / elapsed, commits, cpu)
                if not baseline:
                    return run, None
                took, baseline_cpu = await run_baseline(context, sink, domain, rows, concurrency)
                return run, Round(run, emails / took, baseline_cpu)
            finally:
                await context.database.dispose()

    shipped = next(name for name, paths in variants.items() if paths == SHIPPED)
    measured: list[Round] = []
    others: list[Run] = []
    try:
        for _ in range(rounds):
            _run, paired = await one(shipped, SHIPPED, baseline=True)
            assert paired is not None
            measured.append(paired)
        for name, paths in variants.items():
            if paths != SHIPPED:
                others.append((await one(name, paths, baseline=False))[0])
    finally:
        sink.stop()
    return Figures(emails, measured, others, concurrency, sink_kind)


def report(figures: Figures) -> str:
    lines = [
        f"delivery to a local SMTP sink ({figures.sink}), {figures.emails} emails a run, "
        "DKIM on, SQLite; the whole pipeline (claim, compose, sign, SMTP, journal):",
    ]
    for number, paired in enumerate(figures.rounds, 1):
        run = paired.shipped
        lines.append(
            f"  round {number}: mailbridge {run.delivered_per_second:5.0f} delivered/s "
            f"({run.journal_commits} journal commits), baseline "
            f"{paired.baseline_per_second:5.0f} sent/s: {paired.share:6.1%}"
        )
        lines.append(f"           mailbridge: {per_message(run.cpu, figures.emails)}")
        lines.append(f"           baseline:   {per_message(paired.baseline_cpu, figures.emails)}")
    shipped_name = figures.rounds[0].shipped.name
    lines.append(
        f"  {shipped_name:48} {figures.delivered_per_second:7.0f} delivered/s"
        f"   (median of {len(figures.rounds)} rounds)"
    )
    lines.extend(
        f"  {run.name:48} {run.delivered_per_second:7.0f} delivered/s"
        f"   ({run.journal_commits} journal commits)"
        for run in figures.others
    )
    lines.append(
        f"  {'baseline: aiosmtplib, a persistent connection':48} "
        f"{figures.baseline_per_second:7.0f} sent/s"
        f"   (one aiosmtplib.SMTP per worker, {figures.connections} workers; the same "
        "messages, composed and signed as shipped before the clock; no database)"
    )
    shipped = figures.delivered_per_second
    for module, paths in JUDGED.items():
        library = figures.rate(paths)
        if library is None:
            continue
        ratio = shipped / library
        verdict = "keep" if ratio >= RULE else "replace with the library"
        lines.append(
            f"  {module}: hand-written / library {ratio:5.2f}x end to end "
            f"({shipped:.0f} / {library:.0f} delivered/s): {verdict} (rule: >= {RULE}x)"
        )
    lines.append(
        f"  mailbridge / baseline {figures.share:6.1%}   (the median of the rounds' ratios; "
        f"targets: >= {TARGET_SHARE:.0%} of the baseline, >= {TARGET_RATE:,} delivered/s)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--emails", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3, help="what ships and the baseline")
    parser.add_argument("--pool", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=96)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--sink", choices=["minimal", "aiosmtpd"], default="minimal")
    parser.add_argument(
        "--shipped-only", action="store_true", help="only (a), what ships, and the baseline"
    )
    arguments = parser.parse_args()
    variants = {name: paths for name, paths in VARIANTS.items() if paths == SHIPPED}
    with event_loop_runner() as runner:  # the loop `mailbridge runner` runs on
        figures = runner.run(
            measure(
                arguments.emails, arguments.pool, arguments.concurrency, arguments.batch,
                arguments.sink, variants if arguments.shipped_only else None,
                arguments.rounds,
            )
        )  # fmt: skip
    print(report(figures))


if __name__ == "__main__":
    main()
