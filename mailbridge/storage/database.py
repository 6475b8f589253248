"""The async engine and session factory, tuned per backend.

SQLite (the embedded default) runs in WAL mode with foreign keys on and a busy
timeout, so the API and the runner of one process share it safely; the hot write
paths go through :attr:`Database.sqlite_writer` (:mod:`mailbridge.storage.sqlite_writer`).
On a SQLite file no commit checkpoints: the database's :class:`WalCheckpointer` does,
on a thread of its own (:mod:`mailbridge.storage.checkpoints`).
PostgreSQL runs through asyncpg; an optional schema is put first on the search path, and
each connection names its process (``application_name``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from mailbridge.config import Settings
from mailbridge.storage.checkpoints import WalCheckpointer
from mailbridge.storage.sqlite_writer import SqliteWriter

SQLITE_BUSY_TIMEOUT_MS = 10_000


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _without_checkpoints(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.cursor().execute("PRAGMA wal_autocheckpoint=0")


def application_name() -> str:
    """What PostgreSQL shows for this process's connections (``pg_stat_activity``): the
    command and the process id, ``mailbridge-runner-4242``, so that an operator can tell
    which process holds a lock or runs a slow query."""
    command = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].isidentifier() else "embedded"
    return f"mailbridge-{command}-{os.getpid()}"[:63]


def sqlite_file(url: str) -> str | None:
    """The path of the SQLite file ``url`` names (None: not SQLite, or in memory)."""
    parsed = make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:":
        return None
    return None if path.startswith("file:") else path


def create_engine(
    url: str,
    *,
    schema: str | None = None,
    echo: bool = False,
    checkpointer: WalCheckpointer | None = None,
) -> AsyncEngine:
    """The engine of ``url``; on SQLite with a ``checkpointer``, its connections leave
    checkpoints to it (told of every commit)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, echo=echo)
        event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
        if checkpointer is not None:
            event.listen(engine.sync_engine, "connect", _without_checkpoints)
            event.listen(engine.sync_engine, "commit", lambda _conn: checkpointer.written())
        return engine
    server_settings = {"application_name": application_name()}
    if schema:
        server_settings["search_path"] = schema
    connect_args: dict[str, Any] = {"server_settings": server_settings}
    return create_async_engine(
        url,
        echo=echo,
        pool_size=10,
        max_overflow=10,
        pool_pre_ping=True,
        connect_args=connect_args,
    )


class Database:
    """One engine and its session factory; created by whoever owns the process."""

    def __init__(self, url: str, *, schema: str | None = None, inline_writes: bool = True) -> None:
        self.url = url
        self.inline_writes = inline_writes
        self.schema = schema
        path = sqlite_file(url)
        self.checkpointer = WalCheckpointer(path) if path is not None else None
        self.engine = create_engine(url, schema=schema, checkpointer=self.checkpointer)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._sqlite_writer: SqliteWriter | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        return cls(
            settings.resolved_database_url,
            schema=settings.database_schema,
            inline_writes=settings.bench_inline_sqlite_writes,
        )

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def session(self) -> AsyncSession:
        return self.sessions()

    @property
    def sqlite_writer(self) -> SqliteWriter | None:
        """The inline writer of the hot write paths on a SQLite file (None otherwise)."""
        if self._sqlite_writer is None and self.checkpointer is not None and self.inline_writes:
            self._sqlite_writer = SqliteWriter(
                self.checkpointer, self.engine.dialect, busy_timeout=SQLITE_BUSY_TIMEOUT_MS / 1000
            )
        return self._sqlite_writer

    async def dispose(self) -> None:
        if self._sqlite_writer is not None:
            self._sqlite_writer.close()
            self._sqlite_writer = None
        await self.engine.dispose()
        if self.checkpointer is not None:
            await asyncio.to_thread(self.checkpointer.close)
