"""A team at a glance, for the dashboard's first page: what went out in the last 24
hours, the plan's quotas used, the bounce and complaint rates of the last 30 days, and
whether a runner is alive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.services.accounts import plan_named
from mailbridge.storage.tables import Email, QuotaUsage, Team

DAY = timedelta(hours=24)
MONTH = timedelta(days=30)
# Statuses of an email that reached the relay (the denominator of the rates).
HANDED_OVER = (
    "sent",
    "delivered",
    "delivery_delayed",
    "opened",
    "clicked",
    "bounced",
    "complained",
)


@dataclass(frozen=True)
class Overview:
    plan: str
    sent_today: int
    by_status_today: dict[str, int]
    quota_day_used: int
    quota_day_limit: int | None
    quota_month_used: int
    quota_month_limit: int | None
    handed_over_month: int
    bounce_rate: float | None
    complaint_rate: float | None


async def _statuses_since(session: AsyncSession, team_id: str, since: datetime) -> dict[str, int]:
    rows = await session.execute(
        select(Email.status, func.count())
        .where(Email.team_id == team_id, Email.created_at >= since)
        .group_by(Email.status)
    )
    return {status: int(count) for status, count in rows.tuples()}


def hour_of(instant: datetime) -> datetime:
    """The hourly quota bucket ``instant`` falls in."""
    return instant.replace(minute=0, second=0, microsecond=0)


async def quota_window(
    session: AsyncSession, team_id: str, since: datetime
) -> tuple[int, datetime | None]:
    """As the quota counts: the sum of every hourly bucket that overlaps the window, and
    the oldest of them (None when the window holds none)."""
    query = select(
        func.coalesce(func.sum(QuotaUsage.count), 0), func.min(QuotaUsage.bucket_start)
    ).where(QuotaUsage.team_id == team_id, QuotaUsage.bucket_start >= hour_of(since))
    used, oldest = (await session.execute(query)).one()
    return int(used or 0), oldest


async def team_overview(session: AsyncSession, clock: Clock, team_id: str) -> Overview:
    now = clock.now()
    plan_name = await session.scalar(select(Team.plan).where(Team.id == team_id)) or "free"
    plan = plan_named(plan_name)
    today = await _statuses_since(session, team_id, now - DAY)
    month = await _statuses_since(session, team_id, now - MONTH)
    handed_over = sum(month.get(status, 0) for status in HANDED_OVER)
    return Overview(
        plan=plan_name,
        sent_today=sum(today.values()),
        by_status_today=today,
        quota_day_used=(await quota_window(session, team_id, now - DAY))[0],
        quota_day_limit=plan.daily_emails,
        quota_month_used=(await quota_window(session, team_id, now - MONTH))[0],
        quota_month_limit=plan.monthly_emails,
        handed_over_month=handed_over,
        bounce_rate=month.get("bounced", 0) / handed_over if handed_over else None,
        complaint_rate=month.get("complained", 0) / handed_over if handed_over else None,
    )
