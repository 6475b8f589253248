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

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from mailbridge.config import Settings
from mailbridge.storage.database import Database
from mailbridge.storage.tables import InstanceSetting

SECRET_SETTING = "link_signing_secret"

# A stored secret never changes, so each process reads it once per database.
_stored_secrets: weakref.WeakKeyDictionary[Database, bytes] = weakref.WeakKeyDictionary()


async def instance_secret(database: Database, settings: Settings) -> bytes:
    """The key that signs links: the configured one, else the one stored (made on first use).

    Concurrent first uses, in one process or several, all end with the same secret:
    each inserts its candidate with "on conflict do nothing" and then reads the row
    that won.
    """
    if settings.secret_key:
        return settings.secret_key.encode()
    cached = _stored_secrets.get(database)
    if cached is not None:
        return cached
    async with database.session() as session:
        insert = sqlite_insert if database.is_sqlite else pg_insert
        await session.execute(
            insert(InstanceSetting)
            .values(key=SECRET_SETTING, value=secrets.token_urlsafe(32))
            .on_conflict_do_nothing()
        )
        value = await session.scalar(
            select(InstanceSetting.value).where(InstanceSetting.key == SECRET_SETTING)
        )
        await session.commit()
    assert value is not None  # inserted or already there, in this very transaction
    secret = value.encode()
    _stored_secrets[database] = secret
    return secret
