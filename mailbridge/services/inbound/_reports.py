"""What a received message may change about mail the team sent: the trust rule.

Anyone on the internet can send a DSN or an ARF report, and every recipient of an email
sees its return path. So a report acts only on what it provably concerns:

1. **Which email.** A report to a return path whose tag verifies (``mail.return_path``)
   is about the email it names — and about the one recipient the tag was made for (each
   recipient has an envelope and a return path of its own), so a co-recipient who read
   the return path cannot speak for another. A report to any other address of the team — the
   feedback address a mailbox provider's loop was given, or a return path from before
   tags — is about the email whose ``Message-ID`` the report's copy of the original
   carries, when that is an email of the team's with that very Message-ID (mailbridge
   writes ``<email id@sending domain>``: the team's own domain). A return path whose tag
   does not verify is a forgery: nothing it says counts.
2. **Which addresses.** Of the addresses the report names, only those the email was
   delivered to; a complaint that names nobody (providers redact) counts for an email
   with a single recipient.

A report that passes acts through the email context (bounce, delay, complaint); one that
does not is stored as received mail of kind ``unmatched_report`` with the reason,
suppresses nothing, unsubscribes nobody, and is counted (``mailbridge_inbound_unmatched_
reports``). A reply is threaded to the team's email its ``In-Reply-To``/``References``
name; it changes no status.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.mail.inbound_reports import Bounce, Complaint, message_email_id
from mailbridge.services import email as emails
from mailbridge.services.inbound._routing import Route
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Email

# Why a report was not acted on: the metric's label, and the row's reason.
REASONS = {
    "forged_return_path": "the return path's tag does not verify",
    "no_email": "it names no email of this team",
    "not_a_recipient": "the address it names was not a recipient of the email",
    "no_recipient": "it names no recipient, and the email had several",
}


@dataclass(frozen=True)
class Finding:
    """What a received message was found to be, for one team: the row's ``kind``, the
    email it is about, and why a report was not acted on (a ``REASONS`` key)."""

    kind: str
    email_id: str | None = None
    unmatched: str | None = None

    @property
    def reason(self) -> str | None:
        return REASONS[self.unmatched] if self.unmatched else None


def _unmatched(reason: str) -> Finding:
    return Finding("unmatched_report", unmatched=reason)


async def _reported(
    session: AsyncSession, team_id: str, route: Route, report: Bounce | Complaint
) -> Email | str:
    """The email the report is about, or why there is none."""
    if route.return_path is not None and route.return_path.tag is not None:
        if not route.verified:
            return "forged_return_path"
        found = await emails.reported_email(session, team_id, route.return_path.email_id)
    else:
        message_id = report.original_message_id
        email_id = message_email_id(message_id) if message_id else None
        found = await emails.reported_email(session, team_id, email_id, message_id)
    return found if found is not None else "no_email"


async def _bounce(
    session: AsyncSession, context: ServiceContext, email: Email, route: Route, report: Bounce
) -> Finding:
    recipients = {route.recipient} if route.recipient else set(email.delivery_recipients)
    named = [item for item in report.recipients if item.address.lower() in recipients]
    if not named:
        return _unmatched("not_a_recipient")
    failed = [item for item in named if item.action != "delayed"]
    addresses = [
        emails.BouncedAddress(item.address, item.hard, item.status, item.diagnostic)
        for item in failed or named
    ]
    if failed:
        await emails.record_bounce(session, context.clock, email, addresses)
        return Finding("bounce", email.id)
    emails.record_delay(session, context.clock, email, addresses)
    return Finding("delay", email.id)


async def _complaint(
    session: AsyncSession, context: ServiceContext, email: Email, route: Route,
    report: Complaint,
) -> Finding:  # fmt: skip
    recipients = [route.recipient] if route.recipient else email.delivery_recipients
    if report.original_recipient is not None:
        recipient = report.original_recipient.lower()
        if recipient not in recipients:
            return _unmatched("not_a_recipient")
    elif len(recipients) == 1:
        recipient = recipients[0]
    else:
        return _unmatched("no_recipient")
    await emails.record_complaint(session, context.clock, email, recipient, report.feedback_type)
    return Finding("complaint", email.id)


async def record_report(
    session: AsyncSession, context: ServiceContext, team_id: str, route: Route,
    report: Bounce | Complaint,
) -> Finding:  # fmt: skip
    """Act on a report received at ``route`` for the team, as far as the trust rule lets it."""
    email = await _reported(session, team_id, route, report)
    if isinstance(email, str):
        return _unmatched(email)
    if isinstance(report, Bounce):
        return await _bounce(session, context, email, route, report)
    return await _complaint(session, context, email, route, report)


async def record_reply(
    session: AsyncSession, context: ServiceContext, team_id: str, references: list[str],
    received_id: str, from_address: str | None,
) -> Finding:  # fmt: skip
    """Thread a reply to the team's email it answers (the latest one it names)."""
    for message_id in reversed(references):
        found = await emails.record_reply(
            session, context.clock, team_id, message_email_id(message_id), received_id,
            from_address,
        )  # fmt: skip
        if found is not None:
            return Finding("reply", found.id)
    return Finding("message")
