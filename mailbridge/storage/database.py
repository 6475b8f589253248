"""The async engine and session factory, tuned per backend.

SQLite (the embedded default) runs in WAL mode with foreign keys on and a busy
timeout, so the API and the runner of one process share it safely; the hot write
paths go through :attr:`Database.sqlite_writer` (:mod:`mailbridge.storage.sqlite_writer`).
PostgreSQL runs through asyncpg; an optional schema is put first on the search path.
"""

from __future__ import annotations

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
from mailbridge.storage.sqlite_writer import SqliteWriter

SQLITE_BUSY_TIMEOUT_MS = 10_000


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def create_engine(url: str, *, schema: str | None = None, echo: bool = False) -> AsyncEngine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, echo=echo)
        event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
        return engine
    connect_args: dict[str, Any] = {}
    if schema:
        connect_args["server_settings"] = {"search_path": schema}
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

    def __init__(self, url: str, *, schema: str | None = None) -> None:
        self.url = url
        self.schema = schema
        self.engine = create_engine(url, schema=schema)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._sqlite_writer: SqliteWriter | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        return cls(settings.resolved_database_url, schema=settings.database_schema)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def session(self) -> AsyncSession:
        return self.sessions()

    @property
    def sqlite_writer(self) -> SqliteWriter | None:
        """The inline writer of the hot write paths on a SQLite file (None otherwise)."""
        if self._sqlite_writer is None and self.is_sqlite:
            path = make_url(self.url).database
            if path and path != ":memory:" and not path.startswith("file:"):
                self._sqlite_writer = SqliteWriter(
                    path, self.engine.dialect, busy_timeout=SQLITE_BUSY_TIMEOUT_MS / 1000
                )
        return self._sqlite_writer

    async def dispose(self) -> None:
        if self._sqlite_writer is not None:
            await self._sqlite_writer.close()
            self._sqlite_writer = None
        await self.engine.dispose()
