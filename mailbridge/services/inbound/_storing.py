"""A group of received messages stored in one transaction, before the listener's 250.

For every team a message is for: its ``received_emails`` row and attachment rows, the
quota charge, ``email.received``, and what the message says about mail the team sent —
a bounce (DSN), a complaint (ARF) or a reply — through the email context. A handful of
statements for the whole group, whatever its size.

Two ways in, one set of rows: :func:`store` through an ``AsyncSession`` (PostgreSQL, and
any group with a report or a reply, which the email context records), and
:func:`store_inline` through the database's inline SQLite writer for plain mail on a
SQLite file — the listener's common case, where a statement through aiosqlite costs a
turn of the busy event loop each (``mailbridge.storage.sqlite_writer`` says why).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.mail.inbound_reports import Bounce, Complaint, is_auto_reply, message_email_id
from mailbridge.services import email as emails
from mailbridge.services.accounts import QuotaLedger, commit_charging, lock_teams
from mailbridge.services.context import ServiceContext
from mailbridge.services.inbound._parsing import ParsedMessage
from mailbridge.services.inbound._receiving import Received
from mailbridge.services.inbound._routing import Route
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import ActivityEvent, ReceivedAttachment, ReceivedEmail
from mailbridge.storage.types import new_id


@dataclass(frozen=True)
class Arrival:
    """A prepared message and whom it is for, as the listener hands it to the writer."""

    envelope_from: str
    routes: Sequence[Route]
    received: Received

    @property
    def kind(self) -> str:
        parsed, report = self.received.parsed, self.received.report
        if isinstance(report, Bounce):
            return "bounce"
        if isinstance(report, Complaint):
            return "complaint"
        if parsed.message is not None and is_auto_reply(parsed.message):
            return "auto_reply"
        if parsed.references:
            return "reply"
        return "message"

    @property
    def plain(self) -> bool:
        """Says nothing about mail a team sent: nothing for the email context to record."""
        return self.kind in ("message", "auto_reply")


@dataclass(frozen=True)
class _New:
    """One row to store: a message for one team."""

    arrival: Arrival
    team_id: str
    routes: list[Route]
    received_id: str


async def store(
    session: AsyncSession, context: ServiceContext, arrivals: Sequence[Arrival]
) -> list[list[str]]:
    """The rows of a group, committed; each message's row ids. Raises
    ``DailyQuotaExceeded``/``MonthlyQuotaExceeded`` when a team is over. On PostgreSQL
    the teams are locked last (``accounts.commit_charging``)."""
    return await commit_charging(
        session, lambda lock_first: _store(session, context, arrivals, lock_first=lock_first)
    )


async def _store(
    session: AsyncSession, context: ServiceContext, arrivals: Sequence[Arrival], *,
    lock_first: bool,
) -> list[list[str]]:  # fmt: skip
    now = context.clock.now()
    teams = _teams(arrivals)
    if lock_first:
        await lock_teams(session, teams)
    found = await session.execute(_stored_query(teams, arrivals))
    stored = {(team_id, blob): received_id for team_id, blob, received_id in found.all()}
    ledger = await QuotaLedger.load(session, now, teams)
    results, new = _assign(arrivals, stored, ledger)
    about = [await _about(session, context, item) for item in new]
    for table, rows in _rows(new, about, now):
        if rows:
            await session.execute(insert(table_of(table)), rows)
    await (ledger.store(session) if lock_first else ledger.settle(session))
    return results


def store_inline(
    writer: SqliteWriter, connection: sqlite3.Connection, now: datetime,
    arrivals: Sequence[Arrival],
) -> list[list[str]]:  # fmt: skip
    """:func:`store` of plain mail (every arrival ``plain``) inside a :class:`SqliteWriter`
    transaction, whose ``BEGIN IMMEDIATE`` already holds the lock :func:`lock_teams` takes."""
    teams = _teams(arrivals)
    blobs = sorted({arrival.received.raw_blob for arrival in arrivals})
    stored: dict[tuple[str, str], str] = {}
    for team_id in teams:
        marks = ",".join("?" * len(blobs))
        found = connection.execute(
            f"SELECT blob, id FROM received_emails WHERE team_id = ? AND blob IN ({marks})",
            (team_id, *blobs),
        )
        stored.update({(team_id, blob): received_id for blob, received_id in found})
    ledger = QuotaLedger.load_inline(writer, connection, now, teams)
    results, new = _assign(arrivals, stored, ledger)
    ledger.store_inline(writer, connection)
    for table, rows in _rows(new, [None] * len(new), now):
        writer.insert(connection, table_of(table), rows)
    return results


def _teams(arrivals: Sequence[Arrival]) -> list[str]:
    return sorted({route.team_id for arrival in arrivals for route in arrival.routes})


def _stored_query(teams: list[str], arrivals: Sequence[Arrival]) -> Any:
    # The same bytes again for a team: a sender that never heard the 250 (the listener
    # was killed after the commit) and sent it again. Stored once; answered 250 again.
    blobs = sorted({arrival.received.raw_blob for arrival in arrivals})
    return select(ReceivedEmail.team_id, ReceivedEmail.blob, ReceivedEmail.id).where(
        ReceivedEmail.team_id.in_(teams), ReceivedEmail.blob.in_(blobs)
    )


def _assign(
    arrivals: Sequence[Arrival], stored: dict[tuple[str, str], str], ledger: QuotaLedger
) -> tuple[list[list[str]], list[_New]]:
    """Each message's row ids (those stored already, new ones for the rest, charged)."""
    results: list[list[str]] = []
    new: list[_New] = []
    for arrival in arrivals:
        by_team: dict[str, list[Route]] = {}
        for route in arrival.routes:
            by_team.setdefault(route.team_id, []).append(route)
        ids = []
        for team_id, routes in by_team.items():
            key = (team_id, arrival.received.raw_blob)
            if key not in stored:
                ledger.charge(team_id, 1)
                stored[key] = new_id()
                new.append(_New(arrival, team_id, routes, stored[key]))
            ids.append(stored[key])
        results.append(ids)
    return results, new


def _rows(
    new: list[_New], about: list[str | None], now: datetime
) -> list[tuple[type[Any], list[dict[str, Any]]]]:
    """The rows of each table, in the order they go in."""
    messages, attachments, events = [], [], []
    for item, email_id in zip(new, about, strict=True):
        row = _row(item, email_id, now)
        messages.append(row)
        attachments.extend(_attachment_rows(item, now))
        events.append({
            "id": new_id(), "team_id": item.team_id, "type": "email.received",
            "data": received_data(row), "created_at": now, "dispatched_at": None,
        })  # fmt: skip
    return [(ReceivedEmail, messages), (ReceivedAttachment, attachments), (ActivityEvent, events)]


def _row(item: _New, email_id: str | None, now: datetime) -> dict[str, Any]:
    received = item.arrival.received
    parsed, kind = received.parsed, item.arrival.kind
    return {
        "id": item.received_id, "team_id": item.team_id,
        "envelope_from": item.arrival.envelope_from[:640],
        "envelope_to": [route.address for route in item.routes],
        "from_address": parsed.from_address, "to": parsed.to, "cc": parsed.cc,
        "subject": parsed.subject, "message_id": parsed.message_id,
        "in_reply_to": parsed.in_reply_to, "references": parsed.references,
        "text": parsed.text, "html": parsed.html, "headers": parsed.headers,
        "spf": received.auth.spf, "dkim": received.auth.dkim, "dmarc": received.auth.dmarc,
        "size": received.size, "blob": received.raw_blob, "parse_error": parsed.parse_error,
        # A report or reply that names no email of the team is plain received mail.
        "kind": kind if email_id is not None or kind in ("message", "auto_reply") else "message",
        "email_id": email_id, "created_at": now,
    }  # fmt: skip


def _attachment_rows(item: _New, now: datetime) -> list[dict[str, Any]]:
    received = item.arrival.received
    return [
        {"id": new_id(), "received_email_id": item.received_id, "team_id": item.team_id,
         "position": position, "filename": attachment.filename,
         "content_type": attachment.content_type[:255], "content_id": attachment.content_id,
         "size": len(attachment.content), "checksum": blob, "created_at": now}
        for position, (attachment, blob) in enumerate(
            zip(received.parsed.attachments, received.attachment_blobs, strict=True)
        )
    ]  # fmt: skip


async def _about(session: AsyncSession, context: ServiceContext, item: _New) -> str | None:
    """Record what the message says about one of the team's emails; that email's id."""
    clock, team_id = context.clock, item.team_id
    parsed: ParsedMessage = item.arrival.received.parsed
    report = item.arrival.received.report
    verp = next((route.email_id for route in item.routes if route.email_id), None)
    if isinstance(report, Bounce):
        bounced = [
            emails.BouncedAddress(each.address, each.hard, each.status, each.diagnostic)
            for each in report.recipients
        ]
        found = await emails.record_bounce(
            session, clock, team_id, verp or report.original_email_id, bounced
        )
        return found.id if found is not None else None
    if isinstance(report, Complaint):
        found = await emails.record_complaint(
            session, clock, team_id, verp or report.original_email_id,
            report.original_recipient, report.feedback_type,
        )  # fmt: skip
        return found.id if found is not None else None
    if item.arrival.kind != "reply":
        return None
    for message_id in reversed(parsed.references):
        found = await emails.record_reply(
            session, clock, team_id, message_email_id(message_id), item.received_id,
            parsed.from_address,
        )  # fmt: skip
        if found is not None:
            return found.id
    return None


def received_data(row: dict[str, Any]) -> dict[str, Any]:
    """``email.received``'s data."""
    return {
        "email_id": row["id"], "from": row["from_address"], "to": row["to"],
        "subject": row["subject"], "kind": row["kind"],
        "created_at": isoformat_ms(row["created_at"]),
    }  # fmt: skip
