"""The automation engine on SQLite: step throughput, parked-run memory, wake-up lag.

    .venv/bin/python -m bench.engine [--runs 10000] [--parked 1000000] [--due 10000]

1. Steps/s: ``--runs`` runs through a 5-step automation without delays (send_email,
   contact_update, condition, contact_update, add_to_segment), advanced by the SQL
   engine in batches (target >= 5,000 steps/s), beside the same runs through the
   in-memory backend in this process (the engine's own cost: the baseline).
2. Parked: ``--parked`` runs sleeping in a delay, ``--due`` of them falling due at
   the same instant a few seconds ahead (trigger, delay, then a condition on the
   event, so waking is the run's last write). A real ``mailbridge runner`` process is
   started; its RSS is read from /proc while idle and while waking them (target
   <= 256 MB), and the wake-up lag — from the due time to the moment this process
   saw half (p50) and 99 % (p99) of the due runs completed, counting every 10 ms —
   is reported (target p99 <= 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mailbridge.clock import FakeClock, SystemClock
from mailbridge.config import Settings
from mailbridge.engine import Engine, Event, MemoryBackend, MemoryReferences, TemplateContent, build
from mailbridge.services.automations import sql_engine
from mailbridge.services.kernel import ServiceContext
from mailbridge.steps import VOCABULARY
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from tests.integration.automation_setup import (
    FIVE_STEP_CONNECTIONS,
    five_steps,
    install,
    pro_workspace,
)


def _stamp(instant: datetime) -> str:
    return instant.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")


async def _setup(context: ServiceContext) -> tuple[str, str, str, str]:
    """A pro team with shop.io, a published template and a segment; ids."""
    space = await pro_workspace(context, "bench")
    return space.team_id, space.audience_id, space.template_id, space.segment_id


def _insert_runs(
    path: Path, team_id: str, audience_id: str, automation_id: str, count: int, *,
    phase: str, step_key: str, due: datetime, with_contacts: bool, offset: int = 0,
) -> None:  # fmt: skip
    """Runs (and their contacts) written straight into SQLite, in bulk."""
    now = _stamp(datetime.now(UTC))
    database = sqlite3.connect(path)
    contacts, runs = [], []
    for number in range(offset, offset + count):
        contact_id = str(uuid.uuid4()) if with_contacts else None
        if contact_id is not None:
            contacts.append((contact_id, team_id, audience_id, f"member{number}@mail.net", 0,
                             "{}", now, now))  # fmt: skip
        runs.append((str(uuid.uuid4()), team_id, automation_id, 1, contact_id, "running",
                     step_key, phase, _stamp(due), '{"event": {}}', now, now))  # fmt: skip
    with database:
        database.executemany(
            "INSERT INTO contacts (id, team_id, audience_id, email, unsubscribed, properties,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            contacts,
        )
        database.executemany(
            "INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id,"
            " status, step_key, phase, due_at, context, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            runs,
        )
    database.close()


async def _memory_baseline(runs: int) -> float:
    """Steps/s of the same walk through the in-memory backend."""
    clock = FakeClock()
    backend = MemoryBackend()
    backend.add_segment("segment")
    content = TemplateContent("template", "Shop <news@shop.io>", "Welcome", "<p>Hi</p>", None)
    references = MemoryReferences("shop.io", {"template": content}, {"segment"})
    graph = build(VOCABULARY, five_steps("template", "segment"), FIVE_STEP_CONNECTIONS, references)
    backend.add_automation(graph, team_id="team", audience_id="audience", domain="shop.io")
    engine = Engine(backend, clock, VOCABULARY)
    for number in range(runs):
        await engine.emit(Event("team", "signed_up", email=f"member{number}@mail.net"))
    started = time.perf_counter()
    steps = 0
    while (progress := await engine.run_due(200)).runs:
        steps += progress.steps
    return steps / (time.perf_counter() - started)


async def throughput(directory: Path, runs: int) -> None:
    path = directory / "throughput.db"
    settings = Settings(data_dir=directory / "var", database_url=f"sqlite+aiosqlite:///{path}")
    await asyncio.to_thread(upgrade, settings.resolved_database_url)
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    try:
        team_id, audience_id, template_id, segment_id = await _setup(context)
        automation_id = await install(
            context, team_id, five_steps(template_id, segment_id), FIVE_STEP_CONNECTIONS,
            template_id=template_id, segment_ids=(segment_id,),
        )  # fmt: skip
        _insert_runs(
            path, team_id, audience_id, automation_id, runs, phase="ready", step_key="welcome",
            due=datetime.now(UTC), with_contacts=True,
        )  # fmt: skip
        engine = sql_engine(context)
        started = time.perf_counter()
        steps = 0
        while (progress := await engine.run_due(200)).runs:
            steps += progress.steps
        elapsed = time.perf_counter() - started
    finally:
        await context.database.dispose()
    baseline = await _memory_baseline(runs)
    rate = steps / elapsed
    print(f"steps:        {steps:,} steps of {runs:,} runs in {elapsed:.2f} s")
    print(f"  SQLite:     {rate:,.0f} steps/s (target >= 5,000)")
    print(f"  in memory:  {baseline:,.0f} steps/s (baseline); ratio {rate / baseline:.2f}x")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def parked(directory: Path, count: int, due_count: int) -> None:
    path = directory / "parked.db"
    settings = Settings(data_dir=directory / "var2", database_url=f"sqlite+aiosqlite:///{path}")
    await asyncio.to_thread(upgrade, settings.resolved_database_url)
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    try:
        team_id, audience_id, _, _ = await _setup(context)
        automation_id = await install(
            context, team_id,
            [{"key": "start", "type": "trigger", "config": {"event_name": "signed_up"}},
             {"key": "pause", "type": "delay", "config": {"duration": "30 days"}},
             {"key": "check", "type": "condition",
              "config": {"type": "rule", "field": "event.plan", "operator": "eq",
                         "value": "pro"}}],
            [{"from": "start", "to": "pause"}, {"from": "pause", "to": "check"}],
        )  # fmt: skip
    finally:
        await context.database.dispose()
    far = datetime.now(UTC) + timedelta(days=20)
    started = time.perf_counter()
    for offset in range(0, count - due_count, 200_000):
        chunk = min(200_000, count - due_count - offset)
        _insert_runs(
            path, team_id, audience_id, automation_id, chunk, phase="sleeping",
            step_key="pause", due=far, with_contacts=False, offset=offset,
        )  # fmt: skip
    due_at = datetime.now(UTC) + timedelta(seconds=12)
    _insert_runs(
        path, team_id, audience_id, automation_id, due_count, phase="sleeping", step_key="pause",
        due=due_at, with_contacts=True, offset=count,
    )  # fmt: skip
    print(f"parked:       {count:,} runs written in {time.perf_counter() - started:.1f} s")

    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env.update(MAILBRIDGE_DATABASE_URL=settings.resolved_database_url,
               MAILBRIDGE_DATA_DIR=str(directory / "var2"))  # fmt: skip
    runner = subprocess.Popen(
        [sys.executable, "-m", "mailbridge", "runner"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(max(0.0, (due_at - datetime.now(UTC)).total_seconds() - 2))
        idle_rss = _rss_mb(runner.pid)
        peak = idle_rss
        database = sqlite3.connect(path)
        # How many due runs are still running, counted on the runner's own partial index
        # every 10 ms (cheaper than fetching and diffing their ids: the watcher must not
        # take the core the runner's SQLite thread needs). Lag quantiles come from this.
        pending_sql = (
            "SELECT count(*) FROM automation_runs WHERE status = 'running' AND due_at <= ?"
        )
        stamp = (_stamp(due_at),)
        curve: list[tuple[float, int]] = []
        pending = due_count
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            (pending,) = database.execute(pending_sql, stamp).fetchone()
            curve.append((time.time(), pending))
            peak = max(peak, _rss_mb(runner.pid))
            time.sleep(0.01)
        database.close()
    finally:
        runner.send_signal(15)
        runner.wait(30)
    due_epoch = due_at.timestamp()

    def lag(share: float) -> float:
        """Seconds from the due time until all but ``1 - share`` of the runs completed."""
        left = due_count * (1 - share)
        at = next((when for when, pending in curve if pending <= left), float("nan"))
        return max(0.0, at - due_epoch)

    woken = due_count - (curve[-1][1] if curve else due_count)
    print(f"  runner RSS: {idle_rss:.0f} MB idle, {peak:.0f} MB peak while waking (target <= 256)")
    print(f"  woken:      {woken:,} of {due_count:,} due at once")
    print(f"  lag:        p50 {lag(0.5):.3f} s, p99 {lag(0.99):.3f} s (target p99 <= 1 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--parked", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(throughput(Path(directory), args.runs))
        asyncio.run(parked(Path(directory), args.parked, args.due))


if __name__ == "__main__":
    main()
