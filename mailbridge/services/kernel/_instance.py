"""Values the whole instance shares: today, the secret that signs links in sent mail.

Tracking, unsubscribe and download links must verify in every process that serves
them (any number of ``mailbridge api`` and ``mailbridge runner``), and keep verifying
after a restart. ``MAILBRIDGE_SECRET_KEY`` provides the secret; without it, the first
process that needs one generates it and stores it in ``instance_settings``, where
every later process finds it.
"""

from __future__ import annotations

import secrets
import weakref
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.config import Settings
from mailbridge.storage.database import Database
from mailbridge.storage.tables import InstanceSetting

SECRET_SETTING = "link_signing_secret"
HEARTBEAT_SETTING = "runner_heartbeat"

# A stored secret never changes, so each process reads it once per database.
_stored_secrets: weakref.WeakKeyDictionary[Database, bytes] = weakref.WeakKeyDictionary()


async def instance_secret(
    database: Database, settings: Settings, session: AsyncSession | None = None
) -> bytes:
    """The key that signs links: the configured one, else the one stored (made on first use).

    Concurrent first uses, in one process or several, all end with the same secret:
    each inserts its candidate with "on conflict do nothing" and then reads the row
    that won.

    With ``session``, the secret is read (or made) in that session's transaction and
    not committed: for callers inside a write transaction, where on SQLite a second
    connection would wait for their own lock. A secret made there is cached only once
    it is known to be stored.
    """
    if settings.secret_key:
        return settings.secret_key.encode()
    cached = _stored_secrets.get(database)
    if cached is not None:
        return cached
    if session is not None:
        stored = await _stored_secret(session)
        if stored is not None:
            _stored_secrets[database] = stored.encode()
            return stored.encode()
        return (await _made_secret(session, database)).encode()
    async with database.session() as own:
        value = await _made_secret(own, database)
        await own.commit()
    secret = value.encode()
    _stored_secrets[database] = secret
    return secret


async def _stored_secret(session: AsyncSession) -> str | None:
    value: str | None = await session.scalar(
        select(InstanceSetting.value).where(InstanceSetting.key == SECRET_SETTING)
    )
    return value


async def _made_secret(session: AsyncSession, database: Database) -> str:
    insert = sqlite_insert if database.is_sqlite else pg_insert
    await session.execute(
        insert(InstanceSetting)
        .values(key=SECRET_SETTING, value=secrets.token_urlsafe(32))
        .on_conflict_do_nothing()
    )
    value = await _stored_secret(session)
    assert value is not None  # inserted or already there, in this very transaction
    return value


async def record_runner_heartbeat(database: Database, now: datetime) -> None:
    """A runner is alive: when, for ``GET /health`` (``mailbridge doctor`` reads it)."""
    async with database.session() as session:
        insert = sqlite_insert if database.is_sqlite else pg_insert
        statement = insert(InstanceSetting).values(key=HEARTBEAT_SETTING, value=now.isoformat())
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=["key"], set_={"value": statement.excluded.value}
            )
        )
        await session.commit()


async def runner_heartbeat(database: Database) -> datetime | None:
    """When a runner last said it was alive (None: never)."""
    async with database.session() as session:
        value = await session.scalar(
            select(InstanceSetting.value).where(InstanceSetting.key == HEARTBEAT_SETTING)
        )
    return datetime.fromisoformat(value) if value else None
