"""Alembic environment: async engines for both SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from mailbridge.storage.database import create_engine
from mailbridge.storage.tables import Base, modelled

config = context.config
target_metadata = Base.metadata
# Processes that start at once (each upgrades at start) take turns on PostgreSQL: the
# lock is held until the migrations' transaction ends, and the next one then finds the
# schema at head. A constant of our own ("mailbrdg" in ASCII).
MIGRATION_LOCK = 0x6D61696C62726467


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=modelled,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        context.run_migrations()


async def _run_async() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url, schema=config.attributes.get("schema"))
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_async())
