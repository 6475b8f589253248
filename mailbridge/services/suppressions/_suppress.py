"""Who the team never sends to: reserved domains, and its suppression list.

Reserved documentation and local-testing domains (spec §4.1 rule 2) are dropped as
suppressed on every send; bounced and complained addresses join the list by
themselves; operators and customers add or remove others through /suppressions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.storage.tables import Suppression
from mailbridge.storage.types import new_id


async def suppressed_among(
    session: AsyncSession, team_id: str, addresses: Iterable[str]
) -> set[str]:
    """The addresses (lower-case) of ``addresses`` on the team's suppression list."""
    wanted = {address.lower() for address in addresses}
    if not wanted:
        return set()
    rows = await session.scalars(
        select(Suppression.email).where(
            Suppression.team_id == team_id, Suppression.email.in_(sorted(wanted))
        )
    )
    return set(rows.all())


async def listed_addresses(session: AsyncSession, team_id: str) -> set[str]:
    """Every address (lower-case) on the team's suppression list."""
    rows = await session.scalars(select(Suppression.email).where(Suppression.team_id == team_id))
    return set(rows.all())


def suppressed_among_inline(
    connection: sqlite3.Connection, team_id: str, addresses: Iterable[str]
) -> set[str]:
    """:func:`suppressed_among` inside a :class:`SqliteWriter` transaction."""
    wanted = {address.lower() for address in addresses}
    if not wanted:
        return set()
    rows = connection.execute(
        "SELECT email FROM suppressions"
        " WHERE team_id = ? AND email IN (SELECT value FROM json_each(?))",
        (team_id, json.dumps(sorted(wanted))),
    )
    return {email for (email,) in rows.fetchall()}


async def suppress(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    address: str,
    reason: str,
    source_email_id: str | None = None,
) -> None:
    """Add ``address`` to the list (in the caller's transaction); a second time changes nothing."""
    row = suppression_row(clock, team_id, address, reason, source_email_id)
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    await session.execute(insert(Suppression).values(**row).on_conflict_do_nothing())


def suppression_row(
    clock: Clock, team_id: str, address: str, reason: str, source_email_id: str | None = None
) -> dict[str, Any]:
    """The row :func:`suppress` adds (for callers that write rows in bulk)."""
    return {
        "id": new_id(),
        "team_id": team_id,
        "email": address.lower(),
        "reason": reason,
        "source_email_id": source_email_id,
        "created_at": clock.now(),
    }
