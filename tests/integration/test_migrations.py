"""The migrations build exactly the tables the code declares, and can be undone."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from mailbridge.storage.database import Database
from mailbridge.storage.migrate import alembic_config, upgrade_async
from mailbridge.storage.tables import Base, modelled
from tests.integration.conftest import POSTGRES_URL


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_name": modelled}
    )
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


def test_processes_starting_at_once_upgrade_in_turn(tmp_path: Path) -> None:
    """Several processes upgrading one new PostgreSQL schema at once all succeed (they
    take turns on an advisory lock)."""
    schema = f"mb_race_{uuid.uuid4().hex[:8]}"
    dsn = POSTGRES_URL.replace("postgresql+asyncpg", "postgresql")

    async def execute(sql: str) -> None:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    asyncio.run(execute(f'CREATE SCHEMA "{schema}"'))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env.update({"MAILBRIDGE_DATABASE_URL": POSTGRES_URL, "MAILBRIDGE_DATABASE_SCHEMA": schema,
                "MAILBRIDGE_DATA_DIR": str(tmp_path)})  # fmt: skip
    try:
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "mailbridge", "db", "upgrade"], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
            for _ in range(4)
        ]  # fmt: skip
        outputs = [process.communicate(timeout=120)[0] for process in processes]
        assert [process.returncode for process in processes] == [0] * 4, outputs
    finally:
        asyncio.run(execute(f'DROP SCHEMA "{schema}" CASCADE'))
