"""Short SQLite write transactions run on the event loop's own thread, for the hot paths
(accepting email, the request log, the delivery journal).

Through SQLAlchemy and aiosqlite every statement costs three or four hops to aiosqlite's
thread and back (cursor, execute, fetch, close). Under load each hop waits for a turn of
the busy event loop and for the GIL, so a group commit of a few statements took far
more wall time than SQLite itself worked. The transactions here write a few dozen rows
and never wait for the disk (WAL with ``synchronous=NORMAL`` syncs only at checkpoints),
so running them inline costs less than a single hop would:

- ``BEGIN IMMEDIATE`` never waits inline: this connection has no busy timeout, and a
  transaction that finds the database locked by another connection (the runner,
  another process) retries after an ``asyncio.sleep``, backing off, up to the same
  10 seconds the engine's connections wait.
- Checkpoints, the only writes that sync, are moved off the loop: like every connection
  of the database, this one does not checkpoint when it commits; it tells the
  database's :class:`~mailbridge.storage.checkpoints.WalCheckpointer`, whose thread does.

Rows are encoded by their columns' own SQLAlchemy bind processors (:class:`RowEncoder`),
so what is stored here reads back exactly like rows written through SQLAlchemy.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import JSON, Column, Dialect, Table
from sqlalchemy.orm import class_mapper
from sqlalchemy.types import TypeEngine

from mailbridge.storage.checkpoints import WalCheckpointer
from mailbridge.storage.json_text import json_encoder

T = TypeVar("T")

FIRST_RETRY = 0.001
LAST_RETRY = 0.05


def _connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in (
        "PRAGMA journal_mode=WAL",
        "PRAGMA foreign_keys=ON",
        "PRAGMA busy_timeout=0",
        "PRAGMA synchronous=NORMAL",
        "PRAGMA wal_autocheckpoint=0",
    ):
        connection.execute(pragma)
    return connection


def _is_busy(error: sqlite3.OperationalError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(error)


class SqliteWriter:
    """One connection to a SQLite file, used only from the event loop's thread."""

    def __init__(
        self, checkpointer: WalCheckpointer, dialect: Dialect, *, busy_timeout: float
    ) -> None:
        self.path = checkpointer.path
        self.dialect = dialect
        self._checkpointer = checkpointer
        self._busy_timeout = busy_timeout
        self._connection: sqlite3.Connection | None = None
        self._encoders: dict[tuple[str, tuple[str, ...]], RowEncoder] = {}
        self._decoders: dict[tuple[str, tuple[str, ...]], RowDecoder] = {}

    async def transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in one write transaction, committed if it returns and
        rolled back if it raises. ``work`` must not await: it runs inline."""
        connection = self._connection or self._open()
        delay, deadline = FIRST_RETRY, time.monotonic() + self._busy_timeout
        while True:
            try:
                connection.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as error:
                if not _is_busy(error) or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, LAST_RETRY)
        try:
            result = work(connection)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:  # SQLite rolls back by itself on some errors
                connection.execute("ROLLBACK")
            raise
        self._checkpointer.written()
        return result

    def encoder(self, table: Table, keys: Sequence[str]) -> RowEncoder:
        """The (cached) encoder of rows of ``table`` holding exactly ``keys``."""
        cache_key = (table.name, tuple(keys))
        encoder = self._encoders.get(cache_key)
        if encoder is None:
            encoder = self._encoders[cache_key] = RowEncoder(table, self.dialect, keys)
        return encoder

    def insert(
        self,
        connection: sqlite3.Connection,
        table: Table,
        rows: Sequence[Mapping[str, Any]],
        *,
        or_ignore: bool = False,
    ) -> None:
        """Insert ``rows`` (all with the same keys) inside a :meth:`transaction`;
        ``or_ignore``: rows that would break a unique constraint are skipped."""
        if rows:
            encoder = self.encoder(table, list(rows[0]))
            sql = encoder.insert_sql + (" ON CONFLICT DO NOTHING" if or_ignore else "")
            connection.executemany(sql, encoder.encode(rows))

    def update(
        self,
        connection: sqlite3.Connection,
        table: Table,
        rows: Sequence[Mapping[str, Any]],
        *,
        key: str = "id",
    ) -> None:
        """Set the other columns of each of ``rows`` on the row whose ``key`` matches."""
        if rows:
            keys = [name for name in rows[0] if name != key] + [key]
            encoder = self.encoder(table, keys)
            connection.executemany(encoder.update_sql, encoder.encode(rows))

    def decoder(self, table: Table, *, leaving_out: tuple[str, ...] = ()) -> RowDecoder:
        """The (cached) decoder of rows of ``table``: every column but ``leaving_out``
        (left unloaded on the objects it builds, like the ORM's ``defer``)."""
        cache_key = (table.name, leaving_out)
        decoder = self._decoders.get(cache_key)
        if decoder is None:
            decoder = self._decoders[cache_key] = RowDecoder(table, self.dialect, leaving_out)
        return decoder

    def value(self, type_: TypeEngine[Any], value: Any) -> Any:
        """One parameter as a column of ``type_`` stores it (for hand-written statements)."""
        processor = type_.dialect_impl(self.dialect).bind_processor(self.dialect)
        return processor(value) if processor is not None else value

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _open(self) -> sqlite3.Connection:
        self._connection = _connect(self.path)
        return self._connection


class RowEncoder:
    """Rows of one table (dicts of Python values, as a Core insert takes them) as the
    tuples SQLite stores: every value goes through its column type's bind processor,
    but for the two the send path writes most, done in C when that gives the same text:
    UTC instants and empty JSON lists and objects.
    """

    def __init__(self, table: Table, dialect: Dialect, keys: Sequence[str]) -> None:
        columns = [table.columns[key] for key in keys]
        self.keys = list(keys)
        # Columns left out whose Python-side defaults SQLAlchemy would have applied.
        self._defaulted = [c.key for c in table.columns if c.key not in keys and c.default]
        self._table_name = table.name
        quote = dialect.identifier_preparer.quote
        names = [quote(column.name) for column in columns]
        self._insert_sql = (
            f"INSERT INTO {quote(table.name)} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' for _ in columns)})"
        )
        # The last key picks the row, the others are set.
        self.update_sql = (
            f"UPDATE {quote(table.name)} SET {', '.join(f'{name} = ?' for name in names[:-1])}"
            f" WHERE {names[-1]} = ?"
        )
        self._encoders: list[tuple[int, Callable[[Any], Any]]] = []
        for index, column in enumerate(columns):
            processor = column.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                self._encoders.append((index, _shortcut(column, processor)))

    @property
    def insert_sql(self) -> str:
        if self._defaulted:
            names = ", ".join(self._defaulted)
            raise ValueError(f"rows of {self._table_name} need values for {names}")
        return self._insert_sql

    def encode(self, rows: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        keys, encoders = self.keys, self._encoders
        encoded = []
        for row in rows:
            values = [row[key] for key in keys]
            for index, encode in encoders:
                values[index] = encode(values[index])
            encoded.append(tuple(values))
        return encoded


class RowDecoder:
    """Rows of one table as this connection reads them (every column but those left
    out, in the table's order: :attr:`columns` is the select list) → the values
    SQLAlchemy would give, by the columns' own result processors; and → detached ORM
    objects of ``entity``, built without the unit of work's loading machinery."""

    def __init__(self, table: Table, dialect: Dialect, leaving_out: Sequence[str] = ()) -> None:
        quote = dialect.identifier_preparer.quote
        read = [column for column in table.columns if column.key not in leaving_out]
        self.columns = ", ".join(quote(column.name) for column in read)
        self.keys = [column.key for column in read]
        self._decoders: list[tuple[int, Callable[[Any], Any]]] = []
        for index, column in enumerate(read):
            processor = column.type.dialect_impl(dialect).result_processor(dialect, None)
            if processor is not None:
                self._decoders.append((index, _reading_shortcut(column, processor)))

    def decode(self, row: Sequence[Any]) -> dict[str, Any]:
        values = list(row)
        for index, decode in self._decoders:
            values[index] = decode(values[index])
        return dict(zip(self.keys, values, strict=True))

    def entity(self, entity: type[T], row: Sequence[Any]) -> T:
        """``row`` as an instance of the mapped class ``entity``, as if loaded and then
        detached from its session: attributes set, no pending changes."""
        instance: T = class_mapper(entity).class_manager.new_instance()
        instance.__dict__.update(self.decode(row))
        return instance


def _reading_shortcut(column: Column[Any], processor: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``processor`` (a column's result processor), or a quicker function giving the same
    values for what SQLite holds most: instants as ISO text, empty JSON lists and
    objects (SQLAlchemy's chain of processors is slower; a claimed email has ten of them)."""
    python_type = None
    stored_as = getattr(column.type, "impl_instance", column.type)
    with contextlib.suppress(NotImplementedError):
        python_type = stored_as.python_type
    if python_type is datetime:

        def instant(value: Any) -> Any:
            if type(value) is str and len(value) == 26 and value[10] == " ":
                return datetime.fromisoformat(value).replace(tzinfo=UTC)
            return processor(value)

        stored = ["2026-01-02 03:04:05.000006", "2026-12-31 23:59:59.999999", None]
        return instant if all(instant(s) == processor(s) for s in stored) else processor
    if isinstance(column.type, JSON):
        empty: dict[str, Callable[[], Any]] = {"[]": list, "{}": dict}

        def document(value: Any) -> Any:
            make = empty.get(value) if type(value) is str else None
            return make() if make is not None else processor(value)

        documents = ["[]", "{}", '["a@b.c"]', None]
        return document if all(document(d) == processor(d) for d in documents) else processor
    return processor


def _shortcut(column: Column[Any], processor: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``processor``, or a quicker function giving the same text for the common values."""
    python_type = None
    stored_as = getattr(column.type, "impl_instance", column.type)  # a TypeDecorator's impl
    with contextlib.suppress(NotImplementedError):
        python_type = stored_as.python_type
    if python_type is datetime:
        last: list[Any] = [None, None]  # rows of one group share their instants: the last one

        def instant(value: Any) -> Any:
            if value is last[0]:
                return last[1]
            if value is None:
                return None
            if value.tzinfo is UTC:
                last[:] = value, value.replace(tzinfo=None).isoformat(" ", "microseconds")
                return last[1]
            return processor(value)  # naive (refused), other zones

        samples: list[datetime | None] = [
            datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC), None,
        ]  # fmt: skip
        return instant if all(instant(s) == processor(s) for s in samples) else processor
    if isinstance(column.type, JSON):
        text = json_encoder()

        def document(value: Any) -> Any:
            return processor(value) if value is None else text(value)

        documents: list[Any] = [[], {}, {"a": [1, 2.5, "é", None, True]}, ["x"], "text"]
        return document if all(document(d) == processor(d) for d in documents) else processor
    return processor
