"""A campaign from send to delivered in the file outbox, on SQLite, with a real runner.

    .venv/bin/python -m bench.campaign [--recipients 100000 10000]

For each recipient count: a fresh SQLite database with a team, a verified domain (DKIM
on), an audience of that many contacts and a draft campaign; ``POST
/campaigns/:id/send``'s service call; then ``mailbridge runner`` in a process of its own,
as an operator runs it, until every recipient's email is ``delivered`` to the file
outbox (recipient rows resolved, emails made, composed, signed, written, journaled).
Printed per count: recipients/s from the send to the last delivery, and the runner's
peak RSS (VmHWM; its rendering process apart). Targets: >= 1,000 recipients/s at
100,000; peak RSS <= 300 MB and flat in the recipient count.

The baseline, measured in the same run on the same database: the same number of emails
accepted through ``POST /emails/batch`` (100 a request, the HTTP route in process) and
delivered by the same runner — what a team would do without campaigns.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import func, insert, select

from mailbridge.api.app import create_app
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services import accounts, audiences, campaigns, domains
from mailbridge.services.accounts import Principal
from mailbridge.services.campaigns import CampaignFields, SendCampaign
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Contact, Email
from mailbridge.storage.types import new_id

HTML = "<html><body><h1>Hello {{{FIRST_NAME|there}}}</h1>" + "<p>News.</p>" * 20 + "</body></html>"
TARGET_RATE = 1000
TARGET_RSS_MB = 300


@dataclass(frozen=True)
class Figures:
    recipients: int
    per_second: float
    peak_rss_mb: float
    baseline_per_second: float | None


def _settings(directory: Path) -> Settings:
    return Settings(data_dir=directory, send_rate_limit="1000000/minute")


async def _seed(context: ServiceContext, count: int) -> tuple[str, str]:
    clock = context.clock
    async with context.database.session() as session:
        team = await accounts.create_team(session, clock, "bench", "unlimited")
        await domains.create_domain(
            session, clock, context.settings, team.id, "shop.io", verified=True
        )
        audience = await audiences.create_audience(session, clock, team.id, "Customers")
    now = clock.now()
    for start in range(0, count, 10_000):
        rows = [
            {"id": new_id(), "team_id": team.id, "audience_id": audience.id,
             "email": f"customer{number}@mail.net", "first_name": f"C{number}",
             "last_name": None, "unsubscribed": False, "properties": {},
             "created_at": now, "updated_at": now}
            for number in range(start, min(count, start + 10_000))
        ]  # fmt: skip
        async with context.database.session() as session:
            await session.execute(insert(Contact), rows)
            await session.commit()
    return team.id, audience.id


async def _send_campaign(context: ServiceContext, team_id: str, audience_id: str) -> None:
    fields = CampaignFields.model_validate({
        "name": "Bench", "from": "Shop <news@shop.io>", "subject": "Hi {{{FIRST_NAME}}}",
        "html": HTML, "audience_id": audience_id,
    })  # fmt: skip
    async with context.database.session() as session:
        campaign = await campaigns.create_campaign(session, context.clock, team_id, fields)
        principal = Principal(team_id=team_id, plan="unlimited")
        await campaigns.send_campaign(session, context, principal, campaign.id, SendCampaign())


async def _send_batches(context: ServiceContext, team_id: str, count: int) -> None:
    async with context.database.session() as session:
        _key, token = await accounts.create_api_key(session, context.clock, team_id, "bench")
    app = create_app(context=context)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://bench",
            headers={"Authorization": f"Bearer {token}", "User-Agent": "bench/1.0"},
        ) as client,
    ):  # fmt: skip
        for start in range(0, count, 100):
            batch = [
                {"from": "Shop <news@shop.io>", "to": [f"customer{number}@mail.net"],
                 "subject": f"Hi C{number}", "html": HTML.replace("{{{FIRST_NAME|there}}}",
                 f"C{number}")}
                for number in range(start, min(count, start + 100))
            ]  # fmt: skip
            answer = await client.post("/emails/batch", json=batch)
            assert answer.status_code == 200, answer.text


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _delivered(database: Database) -> int:
    async with database.session() as session:
        query = select(func.count()).select_from(Email).where(Email.status == "delivered")
        return int(await session.scalar(query) or 0)


async def _run(count: int, with_campaign: bool) -> tuple[float, float]:
    """Seconds from the send to the last delivery, and the runner's peak RSS (MB)."""
    with tempfile.TemporaryDirectory() as folder:
        settings = _settings(Path(folder))
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
        try:
            team_id, audience_id = await _seed(context, count)
            environment = {
                **{k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")},
                "MAILBRIDGE_DATA_DIR": folder,
            }
            runner = subprocess.Popen(
                [sys.executable, "-m", "mailbridge", "runner"], env=environment,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await asyncio.sleep(2.0)  # started: its imports are not the rate
                started = time.perf_counter()
                if with_campaign:
                    await _send_campaign(context, team_id, audience_id)
                else:
                    await _send_batches(context, team_id, count)
                while await _delivered(context.database) < count:
                    await asyncio.sleep(0.2)
                elapsed = time.perf_counter() - started
                peak = _peak_rss_mb(runner.pid)
            finally:
                runner.terminate()
                runner.wait(timeout=60)
        finally:
            await context.database.dispose()
    return elapsed, peak


async def measure(counts: list[int], baseline: bool) -> list[Figures]:
    figures = []
    for count in counts:
        elapsed, peak = await _run(count, with_campaign=True)
        base = None
        if baseline:
            base_elapsed, _ = await _run(count, with_campaign=False)
            base = count / base_elapsed
        figures.append(Figures(count, count / elapsed, peak, base))
    return figures


def report(figures: list[Figures]) -> str:
    lines = ["campaign send to delivered (file outbox, DKIM on, SQLite, `mailbridge runner`):"]
    for figure in figures:
        line = (
            f"  {figure.recipients:>7,} recipients  {figure.per_second:7.0f} recipients/s   "
            f"runner peak RSS {figure.peak_rss_mb:6.1f} MB"
        )
        if figure.baseline_per_second is not None:
            line += (
                f"   (baseline, POST /emails/batch: {figure.baseline_per_second:.0f} emails/s; "
                f"campaign/baseline {figure.per_second / figure.baseline_per_second:.2f}x)"
            )
        lines.append(line)
    lines.append(
        f"  targets: >= {TARGET_RATE:,} recipients/s at 100,000; peak RSS <= {TARGET_RSS_MB} MB "
        "and flat in the recipient count"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--recipients", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--no-baseline", action="store_true")
    arguments = parser.parse_args()
    print(report(asyncio.run(measure(arguments.recipients, not arguments.no_baseline))))


if __name__ == "__main__":
    main()
