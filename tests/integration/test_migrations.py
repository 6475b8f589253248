"""The migrations build exactly the tables the code declares, and can be undone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from mailbridge.storage.database import Database
from mailbridge.storage.migrate import alembic_config, upgrade_async
from mailbridge.storage.tables import Base


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_migrated_schema_matches_the_models(database: Database) -> None:
    async with database.engine.connect() as connection:
        assert await connection.run_sync(_differences) == []


async def test_downgrade_to_base_and_up_again(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    await upgrade_async(url)
    database = Database(url)
    try:
        await asyncio.to_thread(command.downgrade, alembic_config(url), "base")
        async with database.engine.connect() as connection:
            names = await connection.run_sync(lambda c: inspect(c).get_table_names())
        assert set(names) <= {"alembic_version"}
        await upgrade_async(url)
        async with database.engine.connect() as connection:
            names = await connection.run_sync(lambda c: inspect(c).get_table_names())
        assert {t.name for t in Base.metadata.sorted_tables} <= set(names)
    finally:
        await database.dispose()
