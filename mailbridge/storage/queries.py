"""Small query helpers every resource service uses."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from sqlalchemy import Select, Table, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import NotFound

M = TypeVar("M")
Q = TypeVar("Q", bound=Select[Any])


def is_postgres(session: AsyncSession) -> bool:
    """Whether the session's database is PostgreSQL (else SQLite, the embedded default)."""
    return session.get_bind().dialect.name == "postgresql"


def locked(query: Q, session: AsyncSession, *, skip_locked: bool = False) -> Q:
    """``query`` taking row locks on PostgreSQL — ``FOR UPDATE``, with ``SKIP LOCKED`` for a
    claim (rows another runner holds are passed over); unchanged on SQLite, where a
    transaction's first write takes the database's one write lock."""
    return query.with_for_update(skip_locked=skip_locked) if is_postgres(session) else query


def table_of(model: type[Any]) -> Table:
    """The Core table of a mapped class (bulk inserts skip the ORM machinery with it)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


def is_ascii_number(value: str) -> bool:
    """Only the ASCII digits 0-9: ``str.isdigit`` and ``int`` also take ``²``, Arabic-Indic digits,
    ``5_0``, ``+5`` and `` 5``."""
    return value.isascii() and value.isdigit()


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


async def get_owned(
    session: AsyncSession, model: type[M], team_id: str, object_id: str, what: str
) -> M:
    """The team's row ``object_id`` of ``model``, or 404 ``not_found`` (foreign ids too)."""
    table: Any = model
    return await get_within(session, model, table.team_id, team_id, object_id, what)


async def get_within(
    session: AsyncSession, model: type[M], owner: Any, owner_id: str, object_id: str, what: str
) -> M:
    """The row ``object_id`` of ``model`` whose ``owner`` column (a team, an inbox, a
    thread) is ``owner_id``, or 404 ``not_found``: a malformed id and another owner's id
    answer alike, so ids cannot be probed."""
    table: Any = model
    row = None
    if is_uuid(object_id):
        row = await session.scalar(select(model).where(table.id == object_id, owner == owner_id))
    if row is None:
        raise NotFound(f"{what} not found.")
    return row
