"""SMTP pipelining (RFC 2920) against one command at a time, end to end: delivered/s
of the delivery worker as it ships, DKIM on, SQLite.

    .venv/bin/python -m bench.pipelining [--emails 3000] [--rtt-ms 5] [--rounds 2]

The same pipeline as ``bench.delivery`` (seeded due emails, the worker as ``mailbridge
runner`` runs it, the minimal sink in its own process, which offers PIPELINING as
Postfix, Exim, Gmail and Microsoft 365 do), once with the relay URL as shipped
(``mail/providers/smtp_pipelining.py``: the envelope and ``DATA`` in one write, their
replies read together) and once with ``?pipelining=false`` (aiosmtplib's own way: a
command, its reply, the next command), alternately, ``--rounds`` times each; medians.
Two settings:

- the sink on loopback, the bench's 32 connections: how much CPU pipelining saves
  where a round trip costs next to nothing;
- the sink answering every command ``--rtt-ms`` late — a relay that far away, as any
  real one is — with the default pool (``smtp_pool_size``, 8 connections): each
  message holds its connection two round trips rather than four.

The project's rule for code past a well-kept library (aiosmtplib does not pipeline):
kept only at >= 1.5x end to end. Printed: each setting's rates and ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from bench.delivery import run_worker, seed
from bench.smtp_sink import SinkProcess
from mailbridge.cli.main import event_loop_runner
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.mail.rendering import SHIPPED
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade

RULE = 1.5
DEFAULT_POOL = Settings.model_fields["smtp_pool_size"].default


@dataclass(frozen=True)
class Setting:
    name: str
    rtt: float  # seconds the sink waits before each reply
    pool: int
    pipelined: list[float]  # delivered/s, a run each round
    one_at_a_time: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.pipelined) / statistics.median(self.one_at_a_time)


async def delivered_per_second(
    sink: SinkProcess, emails: int, pool: int, pipelining: bool
) -> float:
    gc.collect()
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(
            data_dir=Path(directory),
            smtp_url=sink.url + ("" if pipelining else "?pipelining=false"),
            smtp_pool_size=pool,
            delivery_concurrency=96,
            delivery_batch_size=200,
            delivery_lease_seconds=timedelta(minutes=5).total_seconds(),
        )
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
        try:
            await seed(context, emails)
            elapsed, _commits, _cpu = await run_worker(context, sink, emails, SHIPPED)
        finally:
            await context.database.dispose()
    return emails / elapsed


async def measure(emails: int, rtt: float, rounds: int) -> list[Setting]:
    settings: list[Setting] = []
    for name, delay, pool in (
        ("loopback", 0.0, 32),
        (f"a relay {rtt * 1000:g} ms away", rtt, DEFAULT_POOL),
    ):
        sink = SinkProcess("minimal", reply_delay=delay)
        sink.start()
        pipelined: list[float] = []
        one_at_a_time: list[float] = []
        try:
            for _ in range(rounds):
                pipelined.append(await delivered_per_second(sink, emails, pool, True))
                one_at_a_time.append(await delivered_per_second(sink, emails, pool, False))
        finally:
            sink.stop()
        settings.append(Setting(name, delay, pool, pipelined, one_at_a_time))
    return settings


def report(emails: int, settings: list[Setting]) -> str:
    lines = [f"SMTP pipelining, {emails} emails a run, DKIM on, SQLite (delivered/s, medians):"]
    lines.extend(
        f"  {setting.name:26} ({setting.pool:2} connections): pipelined "
        f"{statistics.median(setting.pipelined):6.0f}, one command at a time "
        f"{statistics.median(setting.one_at_a_time):6.0f}: {setting.ratio:5.2f}x   "
        f"(runs: {', '.join(f'{r:.0f}' for r in setting.pipelined)} / "
        f"{', '.join(f'{r:.0f}' for r in setting.one_at_a_time)})"
        for setting in settings
    )
    remote = settings[-1].ratio
    verdict = "keep" if remote >= RULE else "replace with the library (one at a time)"
    lines.append(
        f"  mail/providers/smtp_pipelining.py: {remote:.2f}x end to end at a relay a round "
        f"trip away: {verdict} (rule: >= {RULE}x)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--emails", type=int, default=3000)
    parser.add_argument("--rtt-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    with event_loop_runner() as runner:  # the loop `mailbridge runner` runs on
        settings = runner.run(measure(arguments.emails, arguments.rtt_ms / 1000, arguments.rounds))
    print(report(arguments.emails, settings))


if __name__ == "__main__":
    main()
