"""Storing accepted emails: quota, rows, events and the idempotent answer, in one transaction.

:func:`accept` takes one or more :class:`SendJob` (one request's emails each), locks
their teams, charges each job's recipients against the plan (all of a job or none of
it), stores the jobs that fit and commits once. :class:`EmailWriter` groups the jobs
of concurrent requests into one such transaction, so the API's write rate is not
bounded by one commit per request; on a SQLite file it runs that transaction inline
through the database's :class:`SqliteWriter` (:func:`store_inline`, the same steps in
plain SQL), a fraction of the cost of a dozen aiosqlite round trips.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Table, insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ApiError, ApplicationError, ServiceUnavailable
from mailbridge.services.accounts import (
    QuotaLedger,
    QuotaRaced,
    commit_charging,
    lock_teams,
    locks_last,
)
from mailbridge.services.email import _idempotency as idempotency
from mailbridge.services.email._events import event_rows
from mailbridge.services.email._preparation import PreparedEmail
from mailbridge.services.suppressions import suppressed_among, suppressed_among_inline
from mailbridge.storage.database import Database
from mailbridge.storage.outages import describe, is_unavailable
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import ActivityEvent, Email, EmailAttachment, EmailEvent

logger = logging.getLogger(__name__)


@dataclass
class SendJob:
    team_id: str
    emails: list[PreparedEmail]
    reservation: idempotency.Reservation | None = None
    answer: idempotency.StoredAnswer | None = None  # stored with the reservation

    @property
    def recipients(self) -> int:
        return sum(prepared.charged_recipients for prepared in self.emails)


def _rows(prepared: PreparedEmail, now: datetime, batch: _Rows) -> None:
    row = prepared.row
    batch.emails.append(row)
    batch.attachments.extend(prepared.attachments)
    events: list[tuple[str, dict[str, Any]]] = [(row["status"], {})]
    if prepared.suppressed:
        events.append(("suppressed", {"recipients": prepared.suppressed}))
    for event_type, data in events:
        event, activity = event_rows(row, event_type, data, now)
        batch.events.append(event)
        if activity is not None:
            batch.activity.append(activity)


@dataclass
class _Rows:
    """Rows of a group, stored with one bulk insert a table."""

    emails: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    activity: list[dict[str, Any]] = field(default_factory=list)

    def by_table(self) -> list[tuple[Table, list[dict[str, Any]]]]:
        return [
            (table_of(Email), self.emails), (table_of(EmailAttachment), self.attachments),
            (table_of(EmailEvent), self.events), (table_of(ActivityEvent), self.activity),
        ]  # fmt: skip

    async def insert(self, session: AsyncSession) -> None:
        for table, rows in self.by_table():
            if rows:  # the table, not the mapped class: no ORM bulk machinery on this path
                await session.execute(insert(table), rows)

    def insert_inline(self, writer: SqliteWriter, connection: sqlite3.Connection) -> None:
        for table, rows in self.by_table():
            writer.insert(connection, table, rows)


def _wanted(jobs: list[SendJob]) -> dict[str, set[str]]:
    wanted: dict[str, set[str]] = {}
    for job in jobs:
        for prepared in job.emails:
            wanted.setdefault(job.team_id, set()).update(prepared.candidates)
    return wanted


async def _suppression_lists(session: AsyncSession, jobs: list[SendJob]) -> dict[str, set[str]]:
    """Each team's listed addresses among the recipients of ``jobs`` (one query a team)."""
    return {
        team_id: await suppressed_among(session, team_id, addresses)
        for team_id, addresses in _wanted(jobs).items()
    }


async def accept(session: AsyncSession, clock: Clock, jobs: list[SendJob]) -> list[ApiError | None]:
    """Store every job whose recipients survive the suppression list and fit its team's
    quota, and commit; one outcome per job (None: stored). On PostgreSQL the teams are
    locked last (``accounts.commit_charging``)."""
    return await commit_charging(
        session, lambda lock_first: _store(session, clock, jobs, lock_first=lock_first)
    )


async def store_email(
    session: AsyncSession, clock: Clock, jobs: list[SendJob]
) -> list[ApiError | None]:
    """What :func:`accept` does, inside the caller's transaction (automations send with
    their run's state change), without committing. On PostgreSQL the teams are locked
    last (``accounts._quotas``), in a savepoint that a quota race rolls back."""
    if locks_last(session):
        try:
            async with session.begin_nested():
                return await _store(session, clock, jobs, lock_first=False)
        except QuotaRaced:
            pass
    return await _store(session, clock, jobs, lock_first=True)


async def _store(
    session: AsyncSession, clock: Clock, jobs: list[SendJob], *, lock_first: bool
) -> list[ApiError | None]:
    team_ids = {job.team_id for job in jobs}
    if lock_first:
        await lock_teams(session, team_ids)
    listed = await _suppression_lists(session, jobs)
    ledger = await QuotaLedger.load(session, clock.now(), team_ids)
    settled = _Settled.of(jobs, listed, ledger, clock.now())
    for reservation, answer in settled.answers:
        await idempotency.complete(session, reservation, answer)
    await settled.rows.insert(session)
    await (ledger.store(session) if lock_first else ledger.settle(session))
    return settled.outcomes


async def store_prepared_rows(
    session: AsyncSession, now: datetime, rows: list[dict[str, Any]]
) -> None:
    """Email rows built from an already accepted send (a campaign's recipients, charged
    and checked against the suppression list when the campaign was sent): the rows and
    their ``queued`` events, inside the caller's transaction."""
    batch = _Rows()
    for row in rows:
        _rows(PreparedEmail(row=row, to=list(row["to"]), candidates=[]), now, batch)
    await batch.insert(session)


def store_inline(
    writer: SqliteWriter, connection: sqlite3.Connection, now: datetime, jobs: list[SendJob]
) -> list[ApiError | None]:
    """:func:`store_email` inside a :class:`SqliteWriter` transaction, whose ``BEGIN IMMEDIATE``
    already holds the lock :func:`lock_teams` takes."""
    listed: dict[str, set[str]] = {}
    for team_id, addresses in _wanted(jobs).items():
        listed[team_id] = suppressed_among_inline(connection, team_id, addresses)
    ledger = QuotaLedger.load_inline(writer, connection, now, {job.team_id for job in jobs})
    settled = _Settled.of(jobs, listed, ledger, now)
    for reservation, answer in settled.answers:
        idempotency.complete_inline(writer, connection, reservation, answer)
    settled.rows.insert_inline(writer, connection)
    ledger.store_inline(writer, connection)
    return settled.outcomes


@dataclass
class _Settled:
    """Each job's fate once the suppression lists and quotas are known, and what to store_email."""

    outcomes: list[ApiError | None] = field(default_factory=list)
    rows: _Rows = field(default_factory=lambda: _Rows())
    answers: list[tuple[idempotency.Reservation, idempotency.StoredAnswer]] = field(
        default_factory=list
    )

    @classmethod
    def of(
        cls, jobs: list[SendJob], listed: dict[str, set[str]], ledger: QuotaLedger, now: datetime
    ) -> _Settled:
        settled = cls()
        for job in jobs:
            try:
                for prepared in job.emails:
                    prepared.apply_suppression_list(listed.get(job.team_id, set()))
                ledger.charge(job.team_id, job.recipients)
            except ApiError as refusal:
                settled.outcomes.append(refusal)
                continue
            for prepared in job.emails:
                _rows(prepared, now, settled.rows)
            if job.reservation is not None and job.answer is not None:
                settled.answers.append((job.reservation, job.answer))
            settled.outcomes.append(None)
        return settled


@dataclass
class _Pending:
    job: SendJob
    done: asyncio.Future[ApiError | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class EmailWriter:
    """Groups concurrent :class:`SendJob` into one transaction (a group commit)."""

    def __init__(
        self,
        database: Database,
        clock: Clock,
        *,
        max_group: int = 256,
        on_stored: Callable[[], None] | None = None,
    ) -> None:
        self._database = database
        self._clock = clock
        self._max_group = max_group
        self._on_stored = on_stored
        self._queue: asyncio.Queue[_Pending] | None = None

    async def submit(self, job: SendJob) -> None:
        """Store ``job`` (with whatever else is waiting) or raise its refusal."""
        if self._queue is None:  # not running (embedded use): a group of one
            outcome = (await self._write([job]))[0]
        else:
            pending = _Pending(job)
            await self._queue.put(pending)
            outcome = await pending.done
        if outcome is not None:
            raise outcome

    async def run(self) -> None:
        """Write groups until cancelled; jobs waiting at cancellation are still written."""
        queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._queue = queue
        try:
            while True:
                group = [await queue.get()]
                while not queue.empty() and len(group) < self._max_group:
                    group.append(queue.get_nowait())
                await self._complete(group)
        finally:
            self._queue = None
            leftover = []
            while not queue.empty():
                leftover.append(queue.get_nowait())
            if leftover:
                await self._complete(leftover)

    async def _complete(self, group: list[_Pending]) -> None:
        outcomes = await self._write([pending.job for pending in group])
        for pending, outcome in zip(group, outcomes, strict=True):
            if not pending.done.done():
                pending.done.set_result(outcome)

    async def _write(self, jobs: list[SendJob]) -> list[ApiError | None]:
        try:
            outcomes = await self._store(jobs)
        except Exception as exc:
            if is_unavailable(exc):  # every job would fail alike: none was accepted
                logger.warning(
                    "storing %d send jobs: database unavailable: %s", len(jobs), describe(exc)
                )
                return [ServiceUnavailable() for _ in jobs]
            if len(jobs) > 1:
                # One job the checks let through still broke the shared transaction: store_email
                # each on its own, so that only the culprit hears of it.
                logger.warning("a group of %d send jobs failed; storing them one by one", len(jobs))
                return [outcome for job in jobs for outcome in await self._write([job])]
            logger.exception("storing a send job failed; it was not accepted")
            return [ApplicationError()]
        if self._on_stored is not None and any(outcome is None for outcome in outcomes):
            self._on_stored()
        return outcomes

    async def _store(self, jobs: list[SendJob]) -> list[ApiError | None]:
        writer = self._database.sqlite_writer
        if writer is not None:
            now = self._clock.now()
            return await writer.transaction(
                lambda connection: store_inline(writer, connection, now, jobs)
            )
        async with self._database.session() as session:
            return await accept(session, self._clock, jobs)
