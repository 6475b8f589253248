"""A team's use of its plan, in Resend's ``GET /usage`` shape.

mailbridge's quotas are rolling windows (spec §8.1: the last 24 hours and 30 days,
counted in hourly buckets, ``accounts._quotas``), so nothing resets at midnight:
``resets_at`` is when the oldest hour still counted leaves the window — the next time
``used`` can fall. ``used`` is what the quota counts (recipients), ``sent`` the emails
that left in the window, ``received`` the messages received. Caps mailbridge does not
have (contacts, segments, broadcasts, AI credits) are ``null``; the rate limit is the
send limit the API enforces (``MAILBRIDGE_SEND_RATE_LIMIT``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from limits import parse
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.config import Settings
from mailbridge.services.accounts import plan_named
from mailbridge.services.domains import sending_domain_names
from mailbridge.services.operations._overview import DAY, MONTH, hour_of, quota_window
from mailbridge.storage.tables import (
    AutomationRun,
    Campaign,
    Contact,
    Email,
    ReceivedEmail,
    Segment,
    Team,
)

HOUR = timedelta(hours=1)


async def _count(session: AsyncSession, query: Any) -> int:
    return int(await session.scalar(query) or 0)


async def _window(
    session: AsyncSession, team_id: str, now: datetime, length: timedelta
) -> dict[str, Any]:
    used, oldest = await quota_window(session, team_id, now - length)
    sent = select(func.count()).where(Email.team_id == team_id, Email.sent_at >= now - length)
    received = select(func.count()).where(
        ReceivedEmail.team_id == team_id, ReceivedEmail.created_at >= now - length
    )
    leaves = (oldest if oldest is not None else hour_of(now)) + length + HOUR
    return {
        "used": used,
        "sent": await _count(session, sent),
        "received": await _count(session, received),
        "resets_at": isoformat_ms(leaves),
    }


async def team_usage(
    session: AsyncSession, settings: Settings, now: datetime, team_id: str
) -> dict[str, Any]:
    plan = plan_named(await session.scalar(select(Team.plan).where(Team.id == team_id)) or "free")
    runs_since = now - MONTH
    first_run = await session.scalar(
        select(func.min(AutomationRun.created_at)).where(
            AutomationRun.team_id == team_id, AutomationRun.created_at > runs_since
        )
    )
    rate = parse(settings.send_rate_limit)
    return {
        "object": "usage",
        "plan": plan.name,
        "emails": {
            "daily": {**await _window(session, team_id, now, DAY), "limit": plan.daily_emails},
            "monthly": {
                **await _window(session, team_id, now, MONTH),
                "limit": plan.monthly_emails,
            },
        },
        "contacts": {
            "used": await _count(session, select(func.count()).where(Contact.team_id == team_id)),
            "limit": None,
        },
        "segments": {
            "used": await _count(session, select(func.count()).where(Segment.team_id == team_id)),
            "limit": None,
        },
        "broadcasts": {
            "used": await _count(session, select(func.count()).where(Campaign.team_id == team_id)),
            "limit": None,
        },
        "ai_credits": {"used": 0, "limit": None},
        "automation_runs": {
            "used": await _count(
                session,
                select(func.count()).where(
                    AutomationRun.team_id == team_id, AutomationRun.created_at > runs_since
                ),
            ),
            "limit": plan.monthly_automation_runs,
            "resets_at": isoformat_ms((first_run or now) + MONTH),
        },
        "domains": {
            "used": len(await sending_domain_names(session, team_id)),
            "limit": plan.verified_domains,
        },
        "rate_limit": {
            "limit": rate.amount,
            "duration": f"{rate.get_expiry() * 1000}ms",
        },
    }
