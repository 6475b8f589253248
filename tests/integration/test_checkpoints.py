"""WAL checkpoints of a SQLite file run on the checkpointer's thread, never in a commit:
yet what any connection commits reaches the database file, soon and at the latest
when the database is disposed."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from mailbridge.services.kernel import ServiceContext
from mailbridge.storage import checkpoints
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.queries import table_of
from mailbridge.storage.tables import Team
from mailbridge.storage.types import new_id

NOW = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _in_file_alone(path: str, tmp_path: Path, name: str) -> bool:
    """Whether team ``name`` is in the database file itself (its WAL left behind)."""
    copy = tmp_path / f"copy-{new_id()}.db"
    shutil.copy(path, copy)
    connection = sqlite3.connect(copy)
    try:
        return bool(connection.execute("SELECT 1 FROM teams WHERE name = ?", (name,)).fetchall())
    finally:
        connection.close()


async def test_connections_leave_checkpoints_to_the_checkpointer(
    context: ServiceContext,
) -> None:
    async with context.database.session() as session:
        assert await session.scalar(text("PRAGMA wal_autocheckpoint")) == 0
    writer = context.database.sqlite_writer
    assert writer is not None
    connection = writer._connection or writer._open()
    assert connection.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)


async def test_commits_reach_the_file_through_the_checkpointer_thread(
    context: ServiceContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpointer = context.database.checkpointer
    assert checkpointer is not None
    monkeypatch.setattr(checkpointer, "every", 0.01)
    writer = context.database.sqlite_writer
    assert writer is not None
    async with context.database.session() as session:
        await session.execute(
            table_of(Team).insert(),
            [{"id": new_id(), "name": "by session", "plan": "free", "created_at": NOW}],
        )
        await session.commit()
    team = {"id": new_id(), "name": "by writer", "plan": "free", "created_at": NOW}
    await writer.transaction(lambda c: writer.insert(c, table_of(Team), [team]))
    deadline = time.monotonic() + 30
    while not (
        _in_file_alone(checkpointer.path, tmp_path, "by session")
        and _in_file_alone(checkpointer.path, tmp_path, "by writer")
    ):
        assert time.monotonic() < deadline, "no checkpoint copied the commits into the file"
        await asyncio.sleep(0.02)


async def test_disposing_checkpoints_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY", 3600.0)  # only the last one runs
    url = f"sqlite+aiosqlite:///{tmp_path / 'disposed.db'}"
    await asyncio.to_thread(upgrade, url)
    database = Database(url)
    async with database.session() as session:
        await session.execute(
            table_of(Team).insert(),
            [{"id": new_id(), "name": "kept", "plan": "free", "created_at": NOW}],
        )
        await session.commit()
    assert database.checkpointer is not None
    path = database.checkpointer.path
    assert not _in_file_alone(path, tmp_path, "kept")  # still only in the WAL
    await database.dispose()
    assert _in_file_alone(path, tmp_path, "kept")
