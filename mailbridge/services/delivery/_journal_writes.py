"""The rows one group of deliveries becomes, fenced by the lease.

:class:`DeliveryJournal` (``_journal``) gathers the news of concurrent deliveries; here
is what its commit writes: the fence (which emails this runner still holds), then one
INSERT per table for the group's events, activities and suppressions and one UPDATE by
primary key for the emails' new state, through the session or inline in a
:class:`SqliteWriter` transaction. Kept apart so the journal stays about the grouping.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, or_, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.mail.providers.base import Handover, Outcome
from mailbridge.mail.providers.simulator import SimulatedRecipient
from mailbridge.services.email import PENDING_STATUSES
from mailbridge.services.suppressions import suppress, suppression_row
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import ActivityEvent, Email, EmailEvent, Suppression


@dataclass(eq=False)
class _Entry:
    """One delivery's news for the journal, and the future that answers it."""

    email: Email
    future: asyncio.Future[bool]
    handover: Handover | None = None
    outcome: Outcome | None = None
    simulated: Sequence[SimulatedRecipient] = field(default_factory=tuple)
    recipients: tuple[str, ...] = ()  # whom the handover or outcome concerns
    first: bool = True  # the attempt's first handover (its ``sent`` event)
    final: bool = True  # the attempt is over with this outcome


class _Writes:
    """The rows a group adds, written with one executemany per table.

    The group is recorded at one instant, ``now``: its rows share the datetime objects,
    so each is converted for the database once (the events of an email keep their order
    by their time-ordered ids)."""

    def __init__(self, now: datetime, lease: timedelta) -> None:
        self.now = now
        self.lease_until = now + lease
        self.events: list[dict[str, Any]] = []
        self.activities: list[dict[str, Any]] = []
        # (team, address, reason, email id): added to the suppression list, once.
        self.suppressions: list[tuple[str, str, str, str]] = []
        self._summaries: dict[str, dict[str, Any]] = {}

    def summary(self, email: Email) -> dict[str, Any]:
        """The email's columns the event rows need (read from the object once)."""
        row = vars(email)
        found = self._summaries.get(row["id"])
        if found is None:
            found = self._summaries[row["id"]] = {key: row[key] for key in _SUMMARY}
        return found

    async def flush(self, session: AsyncSession, clock: Clock, emails: list[Email]) -> None:
        # The emails were never added to the session: their new state goes out as one
        # UPDATE by primary key, not object by object through the unit of work.
        if self.events:
            await session.execute(insert(table_of(EmailEvent)), self.events)
        if self.activities:
            await session.execute(insert(table_of(ActivityEvent)), self.activities)
        for team_id, address, reason, email_id in self.suppressions:
            await suppress(session, clock, team_id, address, reason, email_id)
        if emails:
            await session.execute(update(Email), [_email_state(email) for email in emails])

    def flush_inline(
        self, writer: SqliteWriter, connection: sqlite3.Connection, clock: Clock,
        emails: list[Email],
    ) -> None:  # fmt: skip
        """:meth:`flush` inside a :class:`SqliteWriter` transaction."""
        writer.insert(connection, table_of(EmailEvent), self.events)
        writer.insert(connection, table_of(ActivityEvent), self.activities)
        suppressed = [suppression_row(clock, *added) for added in self.suppressions]
        writer.insert(connection, table_of(Suppression), suppressed, or_ignore=True)
        writer.update(connection, table_of(Email), [_email_state(email) for email in emails])


# The columns of an email its events' rows need, and those a delivery changes.
_SUMMARY = ("id", "team_id", "from_address", "to", "subject", "created_at", "tags")
_STATE = (
    "id", "status", "last_event", "updated_at", "sent_at", "due_at", "lease_owner",
    "lease_until", "handed_over_by", "last_error", "recipient_states",
)  # fmt: skip
# A handover goes ahead for an email still waiting, or one whose attempt has already
# handed it over to other recipients (one envelope each).
HANDING_OVER = (*PENDING_STATUSES, "sent")


def _email_state(email: Email) -> dict[str, object]:
    """The columns a delivery changes (``record_email_event`` sets status and times)."""
    row = vars(email)
    return {key: row[key] for key in _STATE}


def _finish(row: dict[str, Any]) -> None:
    """The attempt is over: no lease, nothing due (a retry sets due_at again)."""
    row["due_at"] = row["lease_owner"] = row["lease_until"] = row["handed_over_by"] = None


def _committed(group: list[_Entry], held: set[str]) -> list[_Entry]:
    """The entries whose lease held, with at most one handover an email: a runner whose
    lease ran out during a slow attempt claims the email again itself, and the fence
    (by owner and status) cannot tell its two attempts apart within one group."""
    committed: list[_Entry] = []
    handed_over: set[str] = set()
    for entry in group:
        if entry.email.id not in held:
            continue
        if entry.handover is not None:
            if entry.email.id in handed_over:
                continue
            handed_over.add(entry.email.id)
        committed.append(entry)
    return committed


def _fenced(group: list[_Entry]) -> tuple[list[str], list[str]]:
    """The ids of the group's emails, and of those among them being handed over."""
    ids = [entry.email.id for entry in group]
    return ids, [entry.email.id for entry in group if entry.handover is not None]


def _fence_inline(
    connection: sqlite3.Connection, owner: str, ids: list[str], handovers: list[str]
) -> set[str]:
    """:func:`_fence` inside a :class:`SqliteWriter` transaction. Its ``BEGIN IMMEDIATE``
    holds the database's write lock until the commit, so reading is enough: no other
    writer can take a lease or cancel an email in between (and each row is rewritten
    once, by the update that records the delivery, not twice)."""
    sql = "SELECT id FROM emails WHERE id IN (SELECT value FROM json_each(?)) AND lease_owner = ?"
    parameters: list[Any] = [json.dumps(ids), owner]
    if handovers:
        pending = ", ".join("?" for _ in HANDING_OVER)
        sql += f" AND (id NOT IN (SELECT value FROM json_each(?)) OR status IN ({pending}))"
        parameters += [json.dumps(handovers), *HANDING_OVER]
    return {email_id for (email_id,) in connection.execute(sql, parameters)}


async def _fence(
    session: AsyncSession, owner: str, ids: list[str], handovers: list[str]
) -> set[str]:
    """The ids among ``ids`` still leased to ``owner``, locked for this transaction; of
    ``handovers``, only those still pending or handed over to others (not canceled
    meanwhile)."""
    condition = [Email.id.in_(ids), Email.lease_owner == owner]
    if handovers:
        condition.append(or_(Email.id.not_in(handovers), Email.status.in_(HANDING_OVER)))
    statement = (
        update(Email)
        .where(*condition)
        .values(lease_owner=owner)
        .returning(Email.id)
        .execution_options(synchronize_session=False)
    )
    return set((await session.scalars(statement)).all())
