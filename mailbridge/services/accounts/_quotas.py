"""Plan quotas (spec §8.1): recipients per rolling 24 hours and per rolling 30 days.

Usage is kept in hourly buckets; a window sums the buckets that overlap it, so a
recipient counts for up to one hour longer than the exact window (never shorter:
the quota is never overshot). Checks are atomic: the teams involved are locked
(:func:`lock_teams`) in the same transaction that stores what it charges.

On SQLite the lock comes first (the write lock, taken before the reads: a transaction
that read first and wrote later could not upgrade once another writer committed). On
PostgreSQL every writer of a team — each API process's group of sends, a runner's
automation emails, the inbound listener — meets on that team's row, and whoever holds it
holds it until its commit; taken first, it was held across the whole transaction, so
that sends queued behind a runner or listener waiting for the CPU (they run at a lower
priority) between statements. There the charge is optimistic instead
(:meth:`QuotaLedger.settle`): usage is read without the lock, the rows are written, and
only then is the lock taken and each charge added by one statement that checks it
against the usage as it is now — held from there to the commit. When a charge no longer
fits (a team at its quota, racing another writer), :class:`QuotaRaced` tells the caller
to do it again with the lock first (:func:`commit_charging`). A team whose plan caps
nothing is never locked, and its usage is not read, only counted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import Integer, delete, func, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import DailyQuotaExceeded, MonthlyQuotaExceeded
from mailbridge.services.accounts._plans import plan_named
from mailbridge.storage.queries import is_postgres
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import QuotaUsage, Team

_Written = TypeVar("_Written")

DAY = timedelta(hours=24)
MONTH = timedelta(days=30)
KEEP = MONTH + timedelta(days=1)


class QuotaRaced(Exception):
    """Charges made on a ledger read without the lock no longer fit the usage read under
    it: roll back and charge again with the lock taken first."""


def locks_last(session: AsyncSession) -> bool:
    """Whether this database takes the quota lock at the end (see the module's doc)."""
    return is_postgres(session)


async def commit_charging(
    session: AsyncSession, write: Callable[[bool], Awaitable[_Written]]
) -> _Written:
    """``write(lock_first)`` in ``session``'s transaction, then commit. On PostgreSQL
    first with the lock last (``write`` ends with :meth:`QuotaLedger.settle`); on a
    quota race the transaction is rolled back and written again with the lock first
    (``write`` starts with :func:`lock_teams`). No savepoint: one round trip less while
    the lock is held."""
    if locks_last(session):
        try:
            written = await write(False)
            await session.commit()
            return written
        except QuotaRaced:
            await session.rollback()
    written = await write(True)
    await session.commit()
    return written


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
        ids = [team_id for team_id in ids if _capped(plans.get(team_id, "free"))]
        if not ids:  # no cap to check: the usage is not read (``charge`` still counts)
            return ledger._filled(list(plans), plans, {})
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
        return ledger._filled(sorted({*ids, *plans}), plans, used)

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
        ids = [team_id for team_id in ids if _capped(plans.get(team_id, "free"))]
        if not ids:  # no cap to check: the usage is not read (``charge`` still counts)
            return ledger._filled(list(plans), plans, {})
        listed = json.dumps(ids)
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
        return ledger._filled(sorted({*ids, *plans}), plans, used)

    def _filled(
        self, ids: list[str], plans: dict[str, str], used: dict[str, tuple[int, int]]
    ) -> QuotaLedger:
        for team_id in ids:
            month, day = used.get(team_id, (0, 0))
            self.teams[team_id] = TeamUsage(plans.get(team_id, "free"), day, month)
        return self

    def capped(self, team_id: str) -> bool:
        """Whether the team's plan caps anything (else its usage was not read: 0 here)."""
        return _capped(self.teams[team_id].plan)

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

    async def settle(self, session: AsyncSession) -> None:
        """Store the charges of a ledger loaded *without* the lock (PostgreSQL): lock the
        capped teams charged, then for each team one statement that adds the charge only
        if it still fits the usage as it is now (a statement after the lock reads what
        every earlier holder committed); :class:`QuotaRaced` when one does not fit. A team
        whose plan caps nothing is not locked: its charge is a plain increment."""
        charged = {team_id: usage for team_id, usage in self.teams.items() if usage.pending}
        capped = [team_id for team_id, usage in charged.items() if _capped(usage.plan)]
        if capped:
            await lock_teams(session, capped)
        for team_id, usage in charged.items():
            if not await self._add_if_it_fits(session, team_id, usage):
                raise QuotaRaced(team_id)
            usage.pending = 0

    async def _add_if_it_fits(self, session: AsyncSession, team_id: str, usage: TeamUsage) -> bool:
        plan = plan_named(usage.plan)
        recipients = usage.pending
        room = []
        for cap, since in ((plan.daily_emails, DAY), (plan.monthly_emails, MONTH)):
            if cap is not None:
                used = (
                    select(func.coalesce(func.sum(QuotaUsage.count), 0))
                    .where(
                        QuotaUsage.team_id == team_id,
                        QuotaUsage.bucket_start >= bucket_of(self.now - since),
                    )
                    .scalar_subquery()
                )
                room.append(used + recipients <= cap)
        row = select(
            literal(team_id, QuotaUsage.team_id.type),
            literal(bucket_of(self.now), QuotaUsage.bucket_start.type),
            literal(recipients, Integer()),
        ).where(*room)
        statement = pg_insert(QuotaUsage).from_select(["team_id", "bucket_start", "count"], row)
        added = await session.execute(
            statement.on_conflict_do_update(
                index_elements=["team_id", "bucket_start"],
                set_={"count": QuotaUsage.count + statement.excluded.count},
            ).returning(QuotaUsage.count)
        )
        return added.first() is not None

    async def store(self, session: AsyncSession) -> None:
        bucket = bucket_of(self.now)
        insert = pg_insert if is_postgres(session) else sqlite_insert
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


def _capped(plan: str) -> bool:
    caps = plan_named(plan)
    return caps.daily_emails is not None or caps.monthly_emails is not None


async def purge_old_usage(session: AsyncSession, now: datetime) -> None:
    await session.execute(delete(QuotaUsage).where(QuotaUsage.bucket_start < bucket_of(now - KEEP)))
    await session.commit()
