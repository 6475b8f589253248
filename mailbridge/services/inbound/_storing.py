"""A group of received messages stored in one transaction, before the listener's 250.

For every envelope recipient a message is for: its own ``received_emails`` row and
attachment rows, the quota charge, ``email.received``, and what the message says about
mail the team sent — a bounce or delay (DSN), a complaint (ARF) or a reply — as far as
``_reports`` lets it. A handful of statements for the whole group, whatever its size.

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
from mailbridge.mail.inbound_reports import is_auto_reply
from mailbridge.services.accounts import QuotaLedger, commit_charging, lock_teams
from mailbridge.services.inbound._receiving import Received
from mailbridge.services.inbound._reports import Finding, record_reply, record_report
from mailbridge.services.inbound._routing import Route
from mailbridge.services.kernel import ServiceContext
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
        """``report`` (a DSN or ARF), ``auto_reply``, ``reply`` or ``message``."""
        parsed = self.received.parsed
        if self.received.report is not None:
            return "report"
        if parsed.message is not None and is_auto_reply(parsed.message):
            return "auto_reply"
        if parsed.references:
            return "reply"
        return "message"

    @property
    def plain(self) -> bool:
        """Says nothing about mail a team sent: nothing for the email context to record."""
        return self.kind in ("message", "auto_reply")


@dataclass
class _New:
    """One row to store: a message for one envelope recipient."""

    arrival: Arrival
    route: Route
    received_id: str
    finding: Finding | None = None

    @property
    def team_id(self) -> str:
        return self.route.team_id


@dataclass(frozen=True)
class StoredGroup:
    """Each message's row ids, and the reasons of the reports not acted on (for metrics)."""

    ids: list[list[str]]
    unmatched: list[str]


async def store(
    session: AsyncSession, context: ServiceContext, arrivals: Sequence[Arrival]
) -> StoredGroup:
    """The rows of a group, committed; each message's row ids. Raises
    ``DailyQuotaExceeded``/``MonthlyQuotaExceeded`` when a team is over. On PostgreSQL
    the teams are locked last (``accounts.commit_charging``)."""
    return await commit_charging(
        session, lambda lock_first: _store(session, context, arrivals, lock_first=lock_first)
    )


async def _store(
    session: AsyncSession, context: ServiceContext, arrivals: Sequence[Arrival], *,
    lock_first: bool,
) -> StoredGroup:  # fmt: skip
    now = context.clock.now()
    teams = _teams(arrivals)
    if lock_first:
        await lock_teams(session, teams)
    found = await session.execute(_stored_query(teams, arrivals))
    stored = {(team, blob, to): received_id for team, blob, to, received_id in found.all()}
    ledger = await QuotaLedger.load(session, now, teams)
    results, new = _assign(arrivals, stored, ledger)
    for item in new:
        item.finding = await _about(session, context, item)
    for table, rows in _rows(new, now):
        if rows:
            await session.execute(insert(table_of(table)), rows)
    await (ledger.store(session) if lock_first else ledger.settle(session))
    unmatched = [item.finding.unmatched for item in new if item.finding and item.finding.unmatched]
    return StoredGroup(results, unmatched)


def store_inline(
    writer: SqliteWriter, connection: sqlite3.Connection, now: datetime,
    arrivals: Sequence[Arrival],
) -> list[list[str]]:  # fmt: skip
    """:func:`store` of plain mail (every arrival ``plain``) inside a :class:`SqliteWriter`
    transaction, whose ``BEGIN IMMEDIATE`` already holds the lock :func:`lock_teams` takes."""
    teams = _teams(arrivals)
    blobs = sorted({arrival.received.raw_blob for arrival in arrivals})
    stored: dict[tuple[str, str, str], str] = {}
    for team_id in teams:
        marks = ",".join("?" * len(blobs))
        found = connection.execute(
            "SELECT blob, recipient, id FROM received_emails"
            f" WHERE team_id = ? AND blob IN ({marks})",
            (team_id, *blobs),
        )
        stored.update({(team_id, blob, to): received_id for blob, to, received_id in found})
    ledger = QuotaLedger.load_inline(writer, connection, now, teams)
    results, new = _assign(arrivals, stored, ledger)
    ledger.store_inline(writer, connection)
    for table, rows in _rows(new, now):
        writer.insert(connection, table_of(table), rows)
    return results


def _teams(arrivals: Sequence[Arrival]) -> list[str]:
    return sorted({route.team_id for arrival in arrivals for route in arrival.routes})


def _stored_query(teams: list[str], arrivals: Sequence[Arrival]) -> Any:
    # The same bytes again for a recipient: a sender that never heard the 250 (the
    # listener was killed after the commit) and sent it again. Stored once; answered 250.
    # The same bytes for another recipient are that recipient's own copy.
    blobs = sorted({arrival.received.raw_blob for arrival in arrivals})
    return select(
        ReceivedEmail.team_id, ReceivedEmail.blob, ReceivedEmail.recipient, ReceivedEmail.id
    ).where(ReceivedEmail.team_id.in_(teams), ReceivedEmail.blob.in_(blobs))


def recipient_key(address: str) -> str:
    """Who an envelope recipient is, for storing once: the address, lower-case."""
    return address.lower()[:320]


def _assign(
    arrivals: Sequence[Arrival], stored: dict[tuple[str, str, str], str], ledger: QuotaLedger
) -> tuple[list[list[str]], list[_New]]:
    """Each message's row ids (those stored already, new ones for the rest, charged)."""
    results: list[list[str]] = []
    new: list[_New] = []
    for arrival in arrivals:
        ids = []
        for route in arrival.routes:
            key = (route.team_id, arrival.received.raw_blob, recipient_key(route.address))
            if key not in stored:
                ledger.charge(route.team_id, 1)
                stored[key] = new_id()
                new.append(_New(arrival, route, stored[key]))
            if stored[key] not in ids:
                ids.append(stored[key])
        results.append(ids)
    return results, new


def _rows(new: list[_New], now: datetime) -> list[tuple[type[Any], list[dict[str, Any]]]]:
    """The rows of each table, in the order they go in."""
    messages, attachments, events = [], [], []
    for item in new:
        row = _row(item, now)
        messages.append(row)
        attachments.extend(_attachment_rows(item, now))
        events.append({
            "id": new_id(), "team_id": item.team_id, "type": "email.received",
            "data": received_data(row), "created_at": now, "dispatched_at": None,
        })  # fmt: skip
    return [(ReceivedEmail, messages), (ReceivedAttachment, attachments), (ActivityEvent, events)]


def _row(item: _New, now: datetime) -> dict[str, Any]:
    received = item.arrival.received
    parsed, finding = received.parsed, item.finding or Finding(item.arrival.kind)
    return {
        "id": item.received_id, "team_id": item.team_id,
        "envelope_from": item.arrival.envelope_from[:640],
        "envelope_to": [item.route.address], "recipient": recipient_key(item.route.address),
        "from_address": parsed.from_address, "to": parsed.to, "cc": parsed.cc,
        "subject": parsed.subject, "message_id": parsed.message_id,
        "in_reply_to": parsed.in_reply_to, "references": parsed.references,
        "text": parsed.text, "html": parsed.html, "headers": parsed.headers,
        "spf": received.auth.spf, "dkim": received.auth.dkim, "dmarc": received.auth.dmarc,
        "size": received.size, "blob": received.raw_blob, "parse_error": parsed.parse_error,
        "kind": finding.kind, "email_id": finding.email_id,
        "unmatched_reason": finding.reason, "created_at": now,
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


async def _about(session: AsyncSession, context: ServiceContext, item: _New) -> Finding:
    """Act on what the message says about the team's sent mail, as far as it may."""
    received, team_id = item.arrival.received, item.team_id
    if received.report is not None:
        return await record_report(session, context, team_id, item.route, received.report)
    if item.arrival.kind == "reply":
        parsed = received.parsed
        return await record_reply(
            session, context, team_id, parsed.references, item.received_id, parsed.from_address
        )
    return Finding(item.arrival.kind)


def received_data(row: dict[str, Any]) -> dict[str, Any]:
    """``email.received``'s data."""
    return {
        "email_id": row["id"], "from": row["from_address"], "to": row["to"],
        "subject": row["subject"], "kind": row["kind"],
        "created_at": isoformat_ms(row["created_at"]),
    }  # fmt: skip
