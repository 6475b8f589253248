"""The delivery queue: due emails claimed under a lease, the next due time, the retry schedule.

An email is due when ``due_at <= now`` and it is ``queued``, ``scheduled`` or
``delivery_delayed``. A claim sets ``lease_owner``/``lease_until`` on a batch in one
statement: ``UPDATE ... WHERE id IN (SELECT ... ORDER BY due_at LIMIT n)
RETURNING``, with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL so concurrent runners
take disjoint batches; on SQLite the statement is one write transaction, which
serializes claimers. A lease that runs out (its runner died) makes the email
claimable again.

A ``sent`` email whose ``due_at`` has passed is a handover whose runner died before
recording the outcome: it is *unsettled*. :func:`claim_unsettled_emails` leases those, and
says which runner made each handover (the provider's evidence is filed under its
name, see ``mail.providers.base``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Select, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from mailbridge.services.email import PENDING_STATUSES
from mailbridge.storage.database import Database
from mailbridge.storage.queries import locked, table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import Domain, Email, EmailAttachment


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait after each failed attempt; past the last delay, give up (failed)."""

    delays: tuple[timedelta, ...]

    def delay_after(self, attempts: int) -> timedelta | None:
        """The wait after the ``attempts``-th attempt failed; None when it was the last."""
        if 1 <= attempts <= len(self.delays):
            return self.delays[attempts - 1]
        return None

    @property
    def total(self) -> timedelta:
        return sum(self.delays, timedelta())


# Eight attempts over about a day (23 h 36 min from the first to the last).
EMAIL_RETRY_POLICY = RetryPolicy(
    tuple(timedelta(minutes=minutes) for minutes in (1, 5, 30, 2 * 60, 6 * 60, 6 * 60, 9 * 60))
)


@dataclass
class ClaimedBatch:
    emails: list[Email]
    domains: dict[str, Domain]
    # Attachment rows without their bytes (loaded when the email is delivered).
    attachments: dict[str, list[EmailAttachment]]
    # Unsettled handovers only: the runner that made each (email id -> lease owner).
    handed_over_by: dict[str, str]


def _claimable(now: datetime) -> tuple[ColumnElement[bool], ...]:
    return (
        Email.due_at <= now,
        Email.status.in_(PENDING_STATUSES),
        or_(Email.lease_until.is_(None), Email.lease_until < now),
    )


def _unsettled(now: datetime) -> tuple[ColumnElement[bool], ...]:
    return (Email.due_at <= now, Email.status == "sent", Email.lease_until < now)


def _due_ids(
    session: AsyncSession,
    conditions: tuple[ColumnElement[bool], ...],
    limit: int,
    busy: Collection[str],
) -> Select[tuple[str]]:
    """The ids of up to ``limit`` emails meeting ``conditions``, earliest due first, none
    of ``busy``; on PostgreSQL locked, skipping rows another runner is claiming."""
    due = select(Email.id).where(*conditions).order_by(Email.due_at).limit(limit)
    if busy:
        due = due.where(Email.id.not_in(list(busy)))
    return locked(due, session, skip_locked=True)


async def claim_due(
    session: AsyncSession,
    now: datetime,
    owner: str,
    lease: timedelta,
    limit: int,
    busy: Collection[str] = (),
) -> ClaimedBatch:
    """Lease up to ``limit`` due emails to ``owner`` (the caller commits).

    ``busy``: emails the caller is still delivering, never taken again even when their
    lease ran out meanwhile (a slow attempt must not race a second one of its own)."""
    due = _due_ids(session, _claimable(now), limit, busy)
    statement = (
        update(Email)
        .where(Email.id.in_(due.scalar_subquery()))
        .values(lease_owner=owner, lease_until=now + lease, attempts=Email.attempts + 1)
        .returning(Email)
        .execution_options(synchronize_session=False)
    )
    emails = list((await session.scalars(statement)).all())
    return await _with_related(session, emails, {})


async def claim_emails(
    database: Database,
    now: datetime,
    owner: str,
    lease: timedelta,
    limit: int,
    busy: Collection[str] = (),
) -> ClaimedBatch:
    """:func:`claim_due` in a transaction of its own; on a SQLite file, inline through
    the database's :class:`SqliteWriter` (one statement and the reads of the batch's
    domains and attachments, rows decoded straight into detached objects: a claim
    through the ORM cost more than the rest of a delivery's bookkeeping)."""
    writer = database.sqlite_writer
    if writer is None:
        async with database.session() as session:
            batch = await claim_due(session, now, owner, lease, limit, busy)
            await session.commit()
        return batch
    return await writer.transaction(
        lambda connection: _claim_inline(writer, connection, now, owner, lease, limit, busy)
    )


def _claim_inline(
    writer: SqliteWriter,
    connection: sqlite3.Connection,
    now: datetime,
    owner: str,
    lease: timedelta,
    limit: int,
    busy: Collection[str],
) -> ClaimedBatch:
    """:func:`claim_due`'s statement and its related rows inside a :class:`SqliteWriter`
    transaction."""
    decoder = writer.decoder(table_of(Email))
    instant = table_of(Email).c.due_at.type
    statuses = ", ".join("?" for _ in PENDING_STATUSES)
    sql = (
        "UPDATE emails SET lease_owner = ?, lease_until = ?, attempts = attempts + 1"
        " WHERE id IN (SELECT id FROM emails"
        f" WHERE due_at <= ? AND status IN ({statuses})"
        " AND (lease_until IS NULL OR lease_until < ?)"
        " AND id NOT IN (SELECT value FROM json_each(?))"
        f" ORDER BY due_at LIMIT ?) RETURNING {decoder.columns}"
    )
    stamp = writer.value(instant, now)
    parameters = [
        owner, writer.value(instant, now + lease), stamp, *PENDING_STATUSES, stamp,
        json.dumps(list(busy)), limit,
    ]  # fmt: skip
    emails = [decoder.entity(Email, row) for row in connection.execute(sql, parameters)]
    return _with_related_inline(writer, connection, emails)


def _with_related_inline(
    writer: SqliteWriter, connection: sqlite3.Connection, emails: list[Email]
) -> ClaimedBatch:
    """:func:`_with_related` inside the claim's :class:`SqliteWriter` transaction (through
    a session, the two reads cost about as much as the claim itself)."""
    if not emails:
        return ClaimedBatch([], {}, {}, {})
    domain_ids = json.dumps(sorted({email.domain_id for email in emails if email.domain_id}))
    decoder = writer.decoder(table_of(Domain))
    domains = {
        domain.id: domain
        for domain in (
            decoder.entity(Domain, row)
            for row in connection.execute(
                f"SELECT {decoder.columns} FROM domains"
                " WHERE id IN (SELECT value FROM json_each(?))",
                [domain_ids],
            )
        )
    }
    decoder = writer.decoder(table_of(EmailAttachment), leaving_out=("content",))
    attachments: dict[str, list[EmailAttachment]] = {}
    for row in connection.execute(
        f"SELECT {decoder.columns} FROM email_attachments"
        " WHERE email_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id",
        [json.dumps([email.id for email in emails])],
    ):
        attachment = decoder.entity(EmailAttachment, row)
        attachments.setdefault(attachment.email_id, []).append(attachment)
    return ClaimedBatch(emails, domains, attachments, {})


async def claim_unsettled_emails(
    session: AsyncSession,
    now: datetime,
    owner: str,
    lease: timedelta,
    limit: int,
    busy: Collection[str] = (),
) -> ClaimedBatch:
    """Lease up to ``limit`` unsettled handovers to ``owner`` (the caller commits).

    ``busy``: emails the caller is still delivering, never taken again even when their
    lease ran out meanwhile (a slow attempt must not race a second one of its own)."""
    due = _due_ids(session, _unsettled(now), limit, busy)
    # First take the rows without renaming the owner, to learn who made each handover
    # (a runner that leased it to settle it and died meanwhile did not make it); both
    # statements write, so on SQLite the first one already holds the write lock.
    taken = await session.execute(
        update(Email)
        .where(Email.id.in_(due.scalar_subquery()))
        .values(lease_until=now + lease)
        .returning(Email.id, func.coalesce(Email.handed_over_by, Email.lease_owner))
        .execution_options(synchronize_session=False)
    )
    handed_over_by = {email_id: maker or "" for email_id, maker in taken.tuples()}
    if not handed_over_by:
        return ClaimedBatch([], {}, {}, {})
    emails = await session.scalars(
        update(Email)
        .where(Email.id.in_(list(handed_over_by)))
        .values(lease_owner=owner)
        .returning(Email)
        .execution_options(synchronize_session=False)
    )
    return await _with_related(session, list(emails.all()), handed_over_by)


async def _with_related(
    session: AsyncSession, emails: list[Email], handed_over_by: dict[str, str]
) -> ClaimedBatch:
    if not emails:
        return ClaimedBatch([], {}, {}, handed_over_by)
    ids = [email.id for email in emails]
    domain_ids = {email.domain_id for email in emails if email.domain_id}
    domains: dict[str, Domain] = {}
    if domain_ids:
        found = await session.scalars(select(Domain).where(Domain.id.in_(domain_ids)))
        domains = {domain.id: domain for domain in found}
    attachments: dict[str, list[EmailAttachment]] = {}
    rows = await session.scalars(
        select(EmailAttachment)
        .where(EmailAttachment.email_id.in_(ids))
        .order_by(EmailAttachment.created_at, EmailAttachment.id)
        .options(defer(EmailAttachment.content))
    )
    for attachment in rows:
        attachments.setdefault(attachment.email_id, []).append(attachment)
    return ClaimedBatch(emails, domains, attachments, handed_over_by)


async def any_unsettled_emails(session: AsyncSession, now: datetime) -> bool:
    found = await session.scalar(select(Email.id).where(*_unsettled(now)).limit(1))
    return found is not None


async def attachment_contents(
    session: AsyncSession, attachment_ids: Sequence[str]
) -> dict[str, bytes]:
    rows = await session.execute(
        select(EmailAttachment.id, EmailAttachment.content).where(
            EmailAttachment.id.in_(attachment_ids), EmailAttachment.content.is_not(None)
        )
    )
    return {row.id: row.content for row in rows}


async def next_email_due_at(session: AsyncSession, now: datetime) -> datetime | None:
    """When the earliest unleased pending email comes due (read-only, due_at index)."""
    query = (
        select(Email.due_at)
        .where(
            Email.due_at.is_not(None),
            Email.status.in_(PENDING_STATUSES),
            or_(Email.lease_until.is_(None), Email.lease_until < now),
        )
        .order_by(Email.due_at)
        .limit(1)
    )
    due: datetime | None = await session.scalar(query)
    return due


async def release_emails(
    session: AsyncSession, owner: str, ids: Sequence[str] | None = None
) -> int:
    """Give back the leases ``owner`` holds on emails not handed over yet (graceful stop):
    they are claimable again at once, and the attempt is not counted."""
    statement = (
        update(Email)
        .where(Email.lease_owner == owner, Email.status.in_(PENDING_STATUSES))
        .values(lease_owner=None, lease_until=None, attempts=Email.attempts - 1)
        .execution_options(synchronize_session=False)
    )
    if ids is not None:
        statement = statement.where(Email.id.in_(ids))
    result = await session.execute(statement)
    return int(getattr(result, "rowcount", 0) or 0)


async def owners_holding_leases(session: AsyncSession, owners: Sequence[str]) -> set[str]:
    """Those of ``owners`` that still hold a lease on some email or made a handover not
    settled yet."""
    if not owners:
        return set()
    leasing = select(Email.lease_owner).where(Email.lease_owner.in_(owners))
    handing = select(Email.handed_over_by).where(Email.handed_over_by.in_(owners))
    rows = await session.scalars(leasing.union(handing))
    return {owner for owner in rows if owner is not None}


async def email_leases_and_statuses(
    session: AsyncSession, ids: Sequence[str]
) -> dict[str, tuple[str | None, str]]:
    """The current lease owner and status of each of ``ids`` (absent: the email is gone)."""
    rows = await session.execute(
        select(Email.id, Email.lease_owner, Email.status).where(Email.id.in_(ids))
    )
    return {row.id: (row.lease_owner, row.status) for row in rows}
