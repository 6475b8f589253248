"""Small query helpers every resource service uses."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import NotFound

M = TypeVar("M")


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
    row = None
    if is_uuid(object_id):
        row = await session.scalar(
            select(model).where(table.id == object_id, table.team_id == team_id)
        )
    if row is None:
        raise NotFound(f"{what} not found.")
    return row
