"""Runner processes SIGKILLed again and again while a 5,000-recipient campaign and a
recurring campaign run: afterwards each recipient received exactly one email per
occurrence (counted at a real SMTP listener), and the recurring campaign's occurrence
was sent once, as one child.

Both campaigns are sent before the first runner starts; the recurring one's first
occurrence comes a few seconds in, while runners are being killed. The campaign lease
is short (2 s), so a killed runner's campaign is taken up soon by the next one.
"""

from __future__ import annotations

import asyncio
import collections
import random
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select

from mailbridge.clock import SystemClock, isoformat_ms
from mailbridge.config import Settings
from mailbridge.services import accounts, audiences, campaigns, domains
from mailbridge.services.accounts import Principal
from mailbridge.services.campaigns import CampaignFields, SendCampaign
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Campaign, Contact, Email
from mailbridge.storage.types import new_id
from tests.acceptance.conftest import kill_mid_work
from tests.acceptance.test_delivery_crash import Target, _start, target
from tests.smtp_listener import smtp_listener

pytestmark = pytest.mark.acceptance
__all__ = ["target"]

RECIPIENTS = 5_000
RECURRING_RECIPIENTS = 300
KILLS = 5


async def _audience(context: ServiceContext, team_id: str, prefix: str, count: int) -> str:
    async with context.database.session() as session:
        audience = await audiences.create_audience(session, context.clock, team_id, prefix)
        now = context.clock.now()
        rows: list[dict[str, object]] = [
            {"id": new_id(), "team_id": team_id, "audience_id": audience.id,
             "email": f"{prefix}{number}@mail.net", "first_name": None, "last_name": None,
             "unsubscribed": False, "properties": {}, "created_at": now, "updated_at": now}
            for number in range(count)
        ]  # fmt: skip
        await session.execute(insert(Contact), rows)
        await session.commit()
        return audience.id


async def _seed(settings: Settings) -> tuple[str, str]:
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    try:
        async with context.database.session() as session:
            team = await accounts.create_team(session, context.clock, "crash", "pro")
            await domains.create_domain(
                session, context.clock, settings, team.id, "shop.io", verified=True
            )
        principal = Principal(team_id=team.id, plan="pro")
        ids = []
        for prefix, count, extra, send in (
            ("member", RECIPIENTS, {}, SendCampaign()),
            ("weekly", RECURRING_RECIPIENTS, {"recurrence": "FREQ=HOURLY"},
             SendCampaign(scheduled_at=isoformat_ms(context.clock.now() + timedelta(seconds=4)))),
        ):  # fmt: skip
            audience_id = await _audience(context, team.id, prefix, count)
            fields = CampaignFields.model_validate({
                "name": prefix, "from": "Shop <news@shop.io>", "subject": "News",
                "html": "<p>News</p>", "audience_id": audience_id, **extra,
            })  # fmt: skip
            async with context.database.session() as session:
                campaign = await campaigns.create_campaign(session, context.clock, team.id, fields)
                await campaigns.send_campaign(session, context, principal, campaign.id, send)
            ids.append(campaign.id)
        return ids[0], ids[1]
    finally:
        await context.database.dispose()


async def _progress(settings: Settings, parent_id: str) -> tuple[int, list[str], list[str]]:
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            delivered = await session.scalar(
                select(func.count()).select_from(Email).where(Email.status == "delivered")
            )
            statuses = await session.scalars(select(Campaign.status).order_by(Campaign.created_at))
            children = await session.scalars(
                select(Campaign.status).where(Campaign.parent_id == parent_id)
            )
            return int(delivered or 0), list(statuses.all()), list(children.all())
    finally:
        await database.dispose()


def test_killed_runners_send_each_recipient_one_email_per_occurrence(
    target: Target, tmp_path: Path
) -> None:
    _campaign_id, recurring_id = asyncio.run(_seed(target.settings))
    target.env["MAILBRIDGE_CAMPAIGN_LEASE_SECONDS"] = "2"
    rng = random.Random()
    log = tmp_path / "runner.log"
    total = RECIPIENTS + RECURRING_RECIPIENTS
    with smtp_listener() as listener:
        mid_work = kill_mid_work(
            lambda: _start(target, listener, log),
            lambda: asyncio.run(_progress(target.settings, recurring_id)),
            lambda seen: seen[0] == total and seen[2] == ["sent"],
            KILLS,
            rng,
        )
        assert mid_work >= 2, f"only {mid_work} kills landed while emails were under way"

        runner = _start(target, listener, log)
        try:
            deadline = time.monotonic() + 240
            while True:
                delivered, statuses, children = asyncio.run(
                    _progress(target.settings, recurring_id)
                )
                if delivered == total and children == ["sent"]:
                    break
                assert runner.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, (delivered, statuses, children)
                time.sleep(0.25)
        finally:
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(60) == 0
        received = collections.Counter(
            recipient for message in listener.messages() for recipient in message.rcpt_tos
        )

    expected = {f"member{number}@mail.net": 1 for number in range(RECIPIENTS)}
    expected |= {f"weekly{number}@mail.net": 1 for number in range(RECURRING_RECIPIENTS)}
    assert received == expected
    assert sorted(statuses) == ["recurring", "sent", "sent"]
    assert "Traceback" not in log.read_text()
