"""The per-team contact lock and the time bound of contact writes.

Bulk contact writes (a batch import, deleting an audience or a contact property)
hold the team's lock: a lease row in ``contact_locks``, taken in its own short
transaction and always given back; a holder that crashed loses it when the lease
runs out. While it is held, every other contact write of the team — bulk or single —
answers ``503 contacts_busy`` and changes nothing. Single writes only look at the
lock; they never take it, so they do not queue behind one another.

Every contact write is also time-bound (``contacts_write_timeout``): past it the
transaction is rolled back and the caller hears ``503 contacts_timeout``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ContactsBusy, ContactsTimeout
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import ContactLock

logger = logging.getLogger(__name__)

# The lease outlives the write's own time bound by this much, so a live holder
# never loses it, while a crashed one frees the team soon after.
LEASE_GRACE_SECONDS = 5.0
# A bulk write usually ends long before its lease does; ask for an early retry.
MAX_RETRY_AFTER_SECONDS = 5


def _busy(clock: Clock, expires_at: datetime | None) -> ContactsBusy:
    remaining = 1.0 if expires_at is None else (expires_at - clock.now()).total_seconds()
    retry_after = max(1, min(MAX_RETRY_AFTER_SECONDS, math.ceil(remaining)))
    return ContactsBusy(retry_after=retry_after)


async def acquire_contact_lock(
    database: Database, clock: Clock, team_id: str, lease_seconds: float
) -> str:
    """Take the team's lock in a transaction of its own; the holder's token, or 503."""
    holder = secrets.token_hex(16)
    async with database.session() as session:
        now = clock.now()
        expires_at = now + timedelta(seconds=lease_seconds)
        taken = await session.execute(
            update(ContactLock)
            .where(ContactLock.team_id == team_id, ContactLock.expires_at <= now)
            .values(holder=holder, expires_at=expires_at)
            .execution_options(synchronize_session=False)
        )
        if getattr(taken, "rowcount", 0) == 1:
            await session.commit()
            return holder
        session.add(ContactLock(team_id=team_id, holder=holder, expires_at=expires_at))
        try:
            await session.commit()
        except IntegrityError:
            # A live lease exists (or another caller inserted one just now).
            await session.rollback()
            current = await session.scalar(
                select(ContactLock.expires_at).where(ContactLock.team_id == team_id)
            )
            raise _busy(clock, current) from None
    return holder


async def release_contact_lock(database: Database, team_id: str, holder: str) -> None:
    """Give the lock back if ``holder`` still has it (an expired lease may be another's)."""
    async with database.session() as session:
        await session.execute(
            delete(ContactLock).where(ContactLock.team_id == team_id, ContactLock.holder == holder)
        )
        await session.commit()


async def refuse_while_locked(session: AsyncSession, clock: Clock, team_id: str) -> None:
    """503 ``contacts_busy`` while a bulk write holds the team's lock.

    On PostgreSQL the row is read ``FOR SHARE``: a bulk writer cannot take the lock
    until this single write has committed (SQLite serializes writers anyway).
    """
    expires_at = await session.scalar(
        select(ContactLock.expires_at)
        .where(ContactLock.team_id == team_id)
        .with_for_update(read=True)
    )
    if expires_at is not None and expires_at > clock.now():
        raise _busy(clock, expires_at)


async def discard(session: AsyncSession) -> None:
    """Roll back whatever ``session`` holds, even after a cancelled statement."""
    try:
        await session.rollback()
    except Exception:
        logger.warning("rollback after an interrupted contact write failed", exc_info=True)
        await session.invalidate()


@asynccontextmanager
async def time_bound(session: AsyncSession, seconds: float | None) -> AsyncIterator[None]:
    """Run the body within ``seconds``; past it, roll back and raise ``contacts_timeout``.

    Only the writes belong inside: commit after the block, so that a deadline never
    interrupts a commit whose outcome would then be unknown.
    """
    if seconds is None:
        yield
        return
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError:
        await discard(session)
        raise ContactsTimeout(retry_after=1) from None


@asynccontextmanager
async def holding_contact_lock(
    session: AsyncSession, context: ServiceContext, team_id: str
) -> AsyncIterator[None]:
    """Hold the team's lock around a bulk write made (and committed) on ``session``."""
    lease = context.settings.contacts_write_timeout + LEASE_GRACE_SECONDS
    holder = await acquire_contact_lock(context.database, context.clock, team_id, lease)
    try:
        try:
            yield
        except BaseException:
            # Before giving the lock back: on SQLite an open write would block the release.
            await discard(session)
            raise
    finally:
        await release_contact_lock(context.database, team_id, holder)


@asynccontextmanager
async def single_contact_write(
    session: AsyncSession, clock: Clock, team_id: str, seconds: float | None
) -> AsyncIterator[None]:
    """A one-contact write: refused while a bulk write runs, and time-bound."""
    async with time_bound(session, seconds):
        await refuse_while_locked(session, clock, team_id)
        yield
