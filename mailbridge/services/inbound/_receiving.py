"""Receiving a message: who it is for, then its bytes and rows stored before the 250.

A recipient is routed to a team by one of two kinds of address: any address of a
verified domain with receiving enabled, or the VERP return path mailbridge sets on
its own mail (``bounces+<email id>@<return path>.<domain>``: a bounce names its email).
Anything else is refused (``550 5.1.1``); a team over its quota is told to retry
(``452 4.2.2``: received mail counts against it, spec §8.1).

Storing: the raw bytes and each attachment as blobs (fsynced), then in one
transaction for every team the message is for: its ``received_emails`` row and
attachment rows, the quota charge, ``email.received``, and what the message says
about mail the team sent — a bounce (DSN), a complaint (ARF) or a reply — through the
email context. Only after the commit does the listener answer 250: a crash before it
loses nothing the sender believes delivered (it retries), and one after it leaves
the message stored once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.errors import ApiError
from mailbridge.mail.inbound_reports import (
    Bounce,
    Complaint,
    is_auto_reply,
    message_email_id,
    parse_report,
    verp_email_id,
)
from mailbridge.services import domains
from mailbridge.services import email as emails
from mailbridge.services.accounts import QuotaLedger, lock_teams
from mailbridge.services.activity import record_event
from mailbridge.services.context import ServiceContext
from mailbridge.services.inbound._authentication import AuthResults, authenticate
from mailbridge.services.inbound._blobs import write_blob
from mailbridge.services.inbound._parsing import ParsedMessage, parse
from mailbridge.storage.queries import table_of
from mailbridge.storage.tables import Email, ReceivedAttachment, ReceivedEmail
from mailbridge.storage.types import new_id


@dataclass(frozen=True)
class Route:
    """Where a recipient address goes: the team, and the email a VERP address names."""

    address: str
    team_id: str
    email_id: str | None = None


async def route(session: AsyncSession, address: str) -> Route | None:
    email_id = verp_email_id(address)
    if email_id is not None:
        team_id = await session.scalar(select(Email.team_id).where(Email.id == email_id))
        return Route(address, team_id, email_id) if team_id is not None else None
    _local, _, name = address.rpartition("@")
    domain = await domains.receiving_domain(session, name) if name else None
    return Route(address, domain.team_id) if domain is not None else None


async def fits_quota(session: AsyncSession, context: ServiceContext, team_id: str) -> bool:
    ledger = await QuotaLedger.load(session, context.clock.now(), [team_id])
    try:
        ledger.check(team_id, 1)
    except ApiError:
        return False
    return True


def _kind(parsed: ParsedMessage, report: Bounce | Complaint | None) -> str:
    if isinstance(report, Bounce):
        return "bounce"
    if isinstance(report, Complaint):
        return "complaint"
    if parsed.message is not None and is_auto_reply(parsed.message):
        return "auto_reply"
    if parsed.references:
        return "reply"
    return "message"


@dataclass(frozen=True)
class Received:
    raw_blob: str
    size: int
    parsed: ParsedMessage
    report: Bounce | Complaint | None
    attachment_blobs: list[str]
    auth: AuthResults


async def prepare(
    context: ServiceContext, raw: bytes, envelope_to: Sequence[str], *,
    mail_from: str = "", peer: str | None = None, helo: str | None = None,
) -> Received:  # fmt: skip
    """Parse, authenticate and write the blobs (before any transaction)."""
    root = context.settings.data_dir
    raw_blob = await asyncio.to_thread(write_blob, root, raw)
    parsed = await asyncio.to_thread(parse, raw)
    report = await asyncio.to_thread(parse_report, raw, list(envelope_to), parsed.message)
    blobs = [await asyncio.to_thread(write_blob, root, item.content) for item in parsed.attachments]
    auth = await authenticate(context.settings, raw, parsed.message, mail_from, peer, helo)
    return Received(raw_blob, len(raw), parsed, report, blobs, auth)


async def store(
    session: AsyncSession, context: ServiceContext, envelope_from: str,
    routes: Sequence[Route], received: Received,
) -> list[str]:  # fmt: skip
    """The rows of a received message, one for each team it is for (not committed); their
    ids. Raises ``DailyQuotaExceeded``/``MonthlyQuotaExceeded`` when a team is over."""
    clock = context.clock
    now = clock.now()
    teams: dict[str, list[Route]] = {}
    for item in routes:
        teams.setdefault(item.team_id, []).append(item)
    await lock_teams(session, teams)
    # The same bytes again for a team: a sender that never heard the 250 (the listener
    # was killed after the commit) and sent it again. Stored once; answered 250 again.
    ids = list(
        (
            await session.scalars(
                select(ReceivedEmail.id).where(
                    ReceivedEmail.team_id.in_(list(teams)), ReceivedEmail.blob == received.raw_blob
                )
            )
        ).all()
    )
    if ids:
        stored_for = set(
            (
                await session.scalars(
                    select(ReceivedEmail.team_id).where(ReceivedEmail.id.in_(ids))
                )
            ).all()
        )
        teams = {team: found for team, found in teams.items() if team not in stored_for}
    ledger = await QuotaLedger.load(session, now, teams)
    for team_id in teams:
        ledger.charge(team_id, 1)
    await ledger.store(session)
    parsed, report = received.parsed, received.report
    kind = _kind(parsed, report)
    for team_id, team_routes in teams.items():
        received_id = new_id()
        about = await _about(session, context, team_id, team_routes, received_id, parsed, report)
        row = {
            "id": received_id, "team_id": team_id, "envelope_from": envelope_from[:640],
            "envelope_to": [item.address for item in team_routes],
            "from_address": parsed.from_address, "to": parsed.to, "cc": parsed.cc,
            "subject": parsed.subject, "message_id": parsed.message_id,
            "in_reply_to": parsed.in_reply_to, "references": parsed.references,
            "text": parsed.text, "html": parsed.html, "headers": parsed.headers,
            "spf": received.auth.spf, "dkim": received.auth.dkim, "dmarc": received.auth.dmarc,
            "size": received.size,
            "blob": received.raw_blob, "parse_error": parsed.parse_error,
            "kind": kind if about is not None or kind == "auto_reply" else _unrelated(kind),
            "email_id": about, "created_at": now,
        }  # fmt: skip
        await session.execute(insert(table_of(ReceivedEmail)), [row])
        attachments = [
            {"id": new_id(), "received_email_id": received_id, "team_id": team_id,
             "position": position, "filename": item.filename,
             "content_type": item.content_type[:255], "content_id": item.content_id,
             "size": len(item.content), "checksum": blob, "created_at": now}
            for position, (item, blob) in enumerate(
                zip(parsed.attachments, received.attachment_blobs, strict=True)
            )
        ]  # fmt: skip
        if attachments:
            await session.execute(insert(table_of(ReceivedAttachment)), attachments)
        record_event(session, clock, team_id, "email.received", received_data(row))
        ids.append(received_id)
    return ids


def _unrelated(kind: str) -> str:
    """A report or reply that names no email of the team is plain received mail."""
    return "message" if kind in ("bounce", "complaint", "reply") else kind


async def _about(
    session: AsyncSession, context: ServiceContext, team_id: str, routes: list[Route],
    received_id: str, parsed: ParsedMessage, report: Bounce | Complaint | None,
) -> str | None:  # fmt: skip
    """Record what the message says about one of the team's emails; that email's id."""
    clock = context.clock
    verp = next((item.email_id for item in routes if item.email_id), None)
    if isinstance(report, Bounce):
        bounced = [
            emails.BouncedAddress(item.address, item.hard, item.status, item.diagnostic)
            for item in report.recipients
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
    if parsed.message is None or is_auto_reply(parsed.message):
        return None
    for message_id in reversed(parsed.references):
        found = await emails.record_reply(
            session, clock, team_id, message_email_id(message_id), received_id,
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
