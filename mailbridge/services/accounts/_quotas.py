"""Plan quotas (spec §8.1): recipients per rolling 24 hours and per rolling 30 days.

Usage is kept in hourly buckets; a window sums the buckets that overlap it, so a
recipient counts for up to one hour longer than the exact window (never shorter:
the quota is never overshot). Checks are atomic: the caller first locks the teams
involved (:func:`lock_teams`) in the same transaction that stores what it charges.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import DailyQuotaExceeded, MonthlyQuotaExceeded
from mailbridge.services.accounts._plans import plan_named
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import QuotaUsage, Team

DAY = timedelta(hours=24)
MONTH = timedelta(days=30)
KEEP = MONTH + timedelta(days=1)


def bucket_of(instant: datetime) -> datetime:
    return instant.replace(minute=0, second=0, microsecond=0)


async def lock_teams(session: AsyncSession, team_ids: Iterable[str]) -> None:
    """Serialize quota checks of these teams: a row lock on PostgreSQL; on SQLite, taking
    the write lock now (a no-op UPDATE) so the reads that follow are inside it."""
    ids = sorted(set(team_ids))
    if ids:
        await session.execute(update(Team).where(Team.id.in_(ids)).values(plan=Team.plan))


@dataclass
class TeamUsage:
    plan: str
    day: int
    month: int
    pending: int = 0


@dataclass
class QuotaLedger:
    """Usage of the locked teams, charged in memory, written with :meth:`store`."""

    now: datetime
    teams: dict[str, TeamUsage] = field(default_factory=dict)

    @classmethod
    async def load(
        cls, session: AsyncSession, now: datetime, team_ids: Iterable[str]
    ) -> QuotaLedger:
        ids = sorted(set(team_ids))
        ledger = cls(now)
        if not ids:
            return ledger
        team_rows = await session.execute(select(Team.id, Team.plan).where(Team.id.in_(ids)))
        plans: dict[str, str] = {team_id: plan for team_id, plan in team_rows.all()}
        day_start, month_start = bucket_of(now - DAY), bucket_of(now - MONTH)
        rows = await session.execute(
            select(
                QuotaUsage.team_id,
                func.coalesce(func.sum(QuotaUsage.count), 0),
                func.coalesce(
                    func.sum(QuotaUsage.count).filter(QuotaUsage.bucket_start >= day_start), 0
                ),
            )
            .where(QuotaUsage.team_id.in_(ids), QuotaUsage.bucket_start >= month_start)
            .group_by(QuotaUsage.team_id)
        )
        used = {team_id: (int(month), int(day)) for team_id, month, day in rows.all()}
        return ledger._filled(ids, plans, used)

    @classmethod
    def load_inline(
        cls, writer: SqliteWriter, connection: sqlite3.Connection, now: datetime,
        team_ids: Iterable[str],
    ) -> QuotaLedger:  # fmt: skip
        """:meth:`load` inside a :class:`SqliteWriter` transaction (which holds the lock)."""
        ids = sorted(set(team_ids))
        ledger = cls(now)
        if not ids:
            return ledger
        listed = json.dumps(ids)
        plans = dict(connection.execute(
            "SELECT id, plan FROM teams WHERE id IN (SELECT value FROM json_each(?))", (listed,)
        ).fetchall())  # fmt: skip
        instant = QuotaUsage.bucket_start.type
        rows = connection.execute(
            "SELECT team_id, coalesce(sum(count), 0),"
            " coalesce(sum(count) FILTER (WHERE bucket_start >= ?), 0)"
            " FROM quota_usage"
            " WHERE team_id IN (SELECT value FROM json_each(?)) AND bucket_start >= ?"
            " GROUP BY team_id",
            (writer.value(instant, bucket_of(now - DAY)), listed,
             writer.value(instant, bucket_of(now - MONTH))),
        ).fetchall()  # fmt: skip
        used = {team_id: (int(month), int(day)) for team_id, month, day in rows}
        return ledger._filled(ids, plans, used)

    def _filled(
        self, ids: list[str], plans: dict[str, str], used: dict[str, tuple[int, int]]
    ) -> QuotaLedger:
        for team_id in ids:
            month, day = used.get(team_id, (0, 0))
            self.teams[team_id] = TeamUsage(plans.get(team_id, "free"), day, month)
        return self

    def check(self, team_id: str, recipients: int) -> None:
        """Raise 429 unless ``recipients`` more fit the team's quota (charges nothing)."""
        usage = self.teams[team_id]
        plan = plan_named(usage.plan)
        if plan.daily_emails is not None and usage.day + recipients > plan.daily_emails:
            raise DailyQuotaExceeded(
                f"Sending to {recipients} more recipients would pass the daily quota of "
                f"{plan.daily_emails} (used {usage.day} in the last 24 hours)."
            )
        if plan.monthly_emails is not None and usage.month + recipients > plan.monthly_emails:
            raise MonthlyQuotaExceeded(
                f"Sending to {recipients} more recipients would pass the monthly quota of "
                f"{plan.monthly_emails} (used {usage.month} in the last 30 days)."
            )

    def charge(self, team_id: str, recipients: int) -> None:
        """Charge ``recipients`` or raise 429 leaving the ledger as it was."""
        self.check(team_id, recipients)
        usage = self.teams[team_id]
        usage.day += recipients
        usage.month += recipients
        usage.pending += recipients

    async def store(self, session: AsyncSession) -> None:
        bucket = bucket_of(self.now)
        insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
        for team_id, usage in self.teams.items():
            if usage.pending:
                statement = insert(QuotaUsage).values(
                    team_id=team_id, bucket_start=bucket, count=usage.pending
                )
                await session.execute(
                    statement.on_conflict_do_update(
                        index_elements=["team_id", "bucket_start"],
                        set_={"count": QuotaUsage.count + statement.excluded.count},
                    )
                )
                usage.pending = 0

    def store_inline(self, writer: SqliteWriter, connection: sqlite3.Connection) -> None:
        """:meth:`store` inside a :class:`SqliteWriter` transaction."""
        bucket = writer.value(QuotaUsage.bucket_start.type, bucket_of(self.now))
        for team_id, usage in self.teams.items():
            if usage.pending:
                connection.execute(
                    "INSERT INTO quota_usage (team_id, bucket_start, count) VALUES (?, ?, ?)"
                    " ON CONFLICT (team_id, bucket_start)"
                    " DO UPDATE SET count = count + excluded.count",
                    (team_id, bucket, usage.pending),
                )
                usage.pending = 0


async def purge_old_usage(session: AsyncSession, now: datetime) -> None:
    await session.execute(delete(QuotaUsage).where(QuotaUsage.bucket_start < bucket_of(now - KEEP)))
    await session.commit()
