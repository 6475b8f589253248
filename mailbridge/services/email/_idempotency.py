"""Idempotency-Key on the send endpoints (spec §4.1, §7).

``begin`` reserves the key (``in_progress``) before the work; the send transaction
completes it with the answer, atomically with the emails it stores; a failure that
stored nothing releases it. A repeat with the same key and payload gets the stored
answer; another payload is 409 ``invalid_idempotent_request``; a repeat while the
first is still running is 409 ``concurrent_idempotent_requests``. Keys live 24 hours.
An ``in_progress`` reservation older than ``STALE_AFTER`` belonged to a process that
died, and is taken over.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import (
    ConcurrentIdempotentRequests,
    InvalidIdempotencyKey,
    InvalidIdempotentRequest,
)
from mailbridge.storage.database import Database
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import IdempotencyRecord

KEEP_FOR = timedelta(hours=24)
STALE_AFTER = timedelta(minutes=5)
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class StoredAnswer:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass(frozen=True)
class Reservation:
    team_id: str
    key: str


def check_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidIdempotencyKey()
    return key


def fingerprint(endpoint: str, payload: Any) -> str:
    canonical = json.dumps([endpoint, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


async def begin(
    database: Database, clock: Clock, team_id: str, key: str, endpoint: str, payload_hash: str
) -> StoredAnswer | Reservation:
    """Reserve ``key``, or answer what an earlier request with it got."""
    now = clock.now()
    async with database.session() as session:
        for _attempt in range(3):
            record = await session.get(IdempotencyRecord, (team_id, key))
            if record is not None and record.expires_at <= now:
                await session.delete(record)
                await session.flush()
                record = None
            if record is None:
                session.add(IdempotencyRecord(
                    team_id=team_id, key=key, endpoint=endpoint, request_hash=payload_hash,
                    state="in_progress", created_at=now, expires_at=now + KEEP_FOR,
                ))  # fmt: skip
                try:
                    await session.commit()
                except IntegrityError:
                    await session.rollback()
                    continue
                return Reservation(team_id, key)
            if record.request_hash != payload_hash or record.endpoint != endpoint:
                raise InvalidIdempotentRequest()
            if record.state == "completed":
                return StoredAnswer(
                    int(record.response_status or 200), record.response_body,
                    dict(record.response_headers or {}),
                )  # fmt: skip
            if now - record.created_at < STALE_AFTER:
                raise ConcurrentIdempotentRequests()
            record.created_at = now  # the first holder died: take the key over
            await session.commit()
            return Reservation(team_id, key)
    raise ConcurrentIdempotentRequests()


async def complete(session: AsyncSession, reservation: Reservation, answer: StoredAnswer) -> None:
    """Store the answer in the caller's transaction (with the work it describes)."""
    await session.execute(
        update(IdempotencyRecord)
        .where(
            IdempotencyRecord.team_id == reservation.team_id,
            IdempotencyRecord.key == reservation.key,
        )
        .values(
            state="completed", response_status=answer.status, response_body=answer.body,
            response_headers=answer.headers,
        )
    )  # fmt: skip


def complete_inline(
    writer: SqliteWriter,
    connection: sqlite3.Connection,
    reservation: Reservation,
    answer: StoredAnswer,
) -> None:
    """:func:`complete` inside a :class:`SqliteWriter` transaction."""
    connection.execute(
        "UPDATE idempotency_records SET state = 'completed', response_status = ?,"
        ' response_body = ?, response_headers = ? WHERE team_id = ? AND "key" = ?',
        (
            answer.status,
            writer.value(IdempotencyRecord.response_body.type, answer.body),
            writer.value(IdempotencyRecord.response_headers.type, answer.headers),
            reservation.team_id,
            reservation.key,
        ),
    )


async def release(database: Database, reservation: Reservation) -> None:
    """Forget a reservation whose request stored nothing (so it may be retried)."""
    async with database.session() as session:
        await session.execute(
            delete(IdempotencyRecord).where(
                IdempotencyRecord.team_id == reservation.team_id,
                IdempotencyRecord.key == reservation.key,
                IdempotencyRecord.state == "in_progress",
            )
        )
        await session.commit()


async def purge_expired(database: Database, now: datetime) -> None:
    async with database.session() as session:
        await session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= now))
        await session.commit()
