"""Many rows in one statement: insert, update by id, upsert — inside the caller's session.

On PostgreSQL these are SQLAlchemy Core executemany statements. On SQLite, where the
engine's throughput is bounded by one writer, the same statements go to the driver
as plain SQL with values serialized here (datetimes as SQLAlchemy stores them, JSON
as text): SQLAlchemy's per-value processing was the largest cost of a batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, Boolean, Table, bindparam, insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.storage.json_text import json_encoder
from mailbridge.storage.types import UTCDateTime


def _is_sqlite(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "sqlite"


@lru_cache(maxsize=4096)  # a batch writes the same few instants (its "now") many times
def _stamp(value: datetime) -> str:
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:26]  # without the "+00:00"


_JSON_TEXT = json_encoder((",", ":"))


def _serializer(table: Table, name: str) -> Callable[[Any], Any] | None:
    """How a column's values are written for SQLite; None: as they are."""
    kind = table.c[name].type
    if isinstance(kind, UTCDateTime):
        return _stamp
    if isinstance(kind, JSON):
        return _JSON_TEXT
    if isinstance(kind, Boolean):
        return int
    return None


def _tuples(
    table: Table, names: Sequence[str], rows: Sequence[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    """Each row's values in ``names`` order, serialized; every row has every name."""
    if len(names) == 1:
        columns = [[row[names[0]] for row in rows]]
    else:
        columns = [list(column) for column in zip(*map(itemgetter(*names), rows), strict=True)]
    # Column by column: a comprehension per converted column, not a loop per value.
    for index, name in enumerate(names):
        convert = _serializer(table, name)
        if convert is None:
            continue
        if isinstance(table.c[name].type, UTCDateTime):
            # A batch's instants are a few values, each many times.
            texts: dict[Any, Any] = {}
            columns[index] = [
                None if v is None else texts.get(v) or texts.setdefault(v, convert(v))
                for v in columns[index]
            ]
        else:
            columns[index] = [None if v is None else convert(v) for v in columns[index]]
    return list(zip(*columns, strict=True))


async def insert_rows(
    session: AsyncSession,
    table: Table,
    rows: Sequence[dict[str, Any]],
    *,
    ignore_conflicts: bool = False,
) -> None:
    if not rows:
        return
    names = list(rows[0])
    if _is_sqlite(session):
        placeholders = ", ".join("?" for _ in names)
        conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
        sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({placeholders}){conflict}"
        connection = await session.connection()
        await connection.exec_driver_sql(sql, _tuples(table, names, rows))
        return
    statement = pg_insert(table).on_conflict_do_nothing() if ignore_conflicts else insert(table)
    await session.execute(statement, list(rows))


async def update_rows(
    session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]], columns: Sequence[str]
) -> None:
    """Set ``columns`` of each row, found by its ``id``."""
    if not rows:
        return
    if _is_sqlite(session):
        sql = f"UPDATE {table.name} SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?"
        connection = await session.connection()
        await connection.exec_driver_sql(sql, _tuples(table, [*columns, "id"], rows))
        return
    statement = (
        update(table)
        .where(table.c.id == bindparam("b_id"))
        .values({name: bindparam(name) for name in columns})
    )
    await session.execute(
        statement, [{"b_id": row["id"], **{c: row[c] for c in columns}} for row in rows]
    )


async def upsert_rows(
    session: AsyncSession,
    table: Table,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    *,
    key: Sequence[str] = ("id",),
) -> None:
    """Insert each row, or set ``columns`` of the one with the same ``key`` columns."""
    if not rows:
        return
    names = list(rows[0])
    if _is_sqlite(session):
        placeholders = ", ".join("?" for _ in names)
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns)
        sql = (
            f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({placeholders})"
            f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        )
        connection = await session.connection()
        await connection.exec_driver_sql(sql, _tuples(table, names, rows))
        return
    statement = pg_insert(table)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c[name] for name in key],
        set_={c: statement.excluded[c] for c in columns},
    )
    await session.execute(statement, list(rows))


@lru_cache(maxsize=4096)
def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _reader(table: Table, name: str) -> Callable[[Any], Any] | None:
    """How a column's SQLite value is read back; None: as it is."""
    kind = table.c[name].type
    if isinstance(kind, UTCDateTime):
        return _instant
    if isinstance(kind, JSON):
        return json.loads
    if isinstance(kind, Boolean):
        return bool
    return None


async def sqlite_rows(
    session: AsyncSession, table: Table, sql: str, params: Sequence[Any]
) -> list[dict[str, Any]]:
    """Run ``sql`` (SQLite only; it selects or returns ``table``'s columns in order) and read
    the rows back as dicts, without SQLAlchemy's per-value processing."""
    names = [column.name for column in table.c]
    readers = [(name, reader) for name in names if (reader := _reader(table, name)) is not None]
    connection = await session.connection()
    result = await connection.exec_driver_sql(sql, tuple(params))
    rows = []
    for values in result.all():
        row = dict(zip(names, values, strict=True))
        for name, read in readers:
            if row[name] is not None:
                row[name] = read(row[name])
        rows.append(row)
    return rows


def sqlite_stamp(value: datetime) -> str:
    """An instant as SQLite stores it (to compare with stored ones in raw SQL)."""
    return _stamp(value)
