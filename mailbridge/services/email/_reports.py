"""What comes back about a sent email: bounces, delays, complaints and replies (inbound mail).

- A bounce marks the email ``bounced`` with ``bounce: {type, status, diagnostic}``
  (``hard`` for 5.x.x, ``soft`` for 4.x.x) and fires ``email.bounced``; a hard bounce
  puts the address on the team's suppression list (spec §6.1), a soft one never does.
- A delay (a remote server still trying) fires ``email.delivery_delayed`` and leaves the
  status alone: ``delivery_delayed`` is also the status of an email mailbridge itself will
  try again, and the remote server's delay must not hand the email to the relay twice.
- A complaint marks it ``complained``, fires ``email.complained``, suppresses the
  address and unsubscribes its contact.
- A reply is an ``email.replied`` event that leaves the status alone; for a campaign's
  email it is the contact's ``replied`` engagement (the A/B ``reply`` metric).

Which email a report is about, and which of its recipients it may name, the caller
decides (``services.inbound``: a report changes only what it provably concerns); these
act on what they are given. Each runs in the caller's transaction (the received
message's rows commit with it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.services.audiences import event_data
from mailbridge.services.email._events import record_email_event
from mailbridge.services.email._tracking import engaged
from mailbridge.services.kernel import record_event
from mailbridge.services.suppressions import suppress
from mailbridge.storage.tables import Contact, Email


@dataclass(frozen=True)
class BouncedAddress:
    address: str
    hard: bool
    status: str | None = None
    diagnostic: str | None = None


async def _email(session: AsyncSession, team_id: str, email_id: str | None) -> Email | None:
    if email_id is None:
        return None
    found: Email | None = await session.scalar(
        select(Email).where(Email.id == email_id, Email.team_id == team_id)
    )
    return found


async def reported_email(
    session: AsyncSession, team_id: str, email_id: str | None, message_id: str | None = None
) -> Email | None:
    """The team's email with this id, and (when given) this very ``Message-ID`` — which
    mailbridge writes as ``<email id@sending domain>``, so the team's own domain too."""
    if message_id is None:
        return await _email(session, team_id, email_id)
    if email_id is None:
        return None
    found: Email | None = await session.scalar(
        select(Email).where(
            Email.id == email_id, Email.team_id == team_id,
            func.lower(Email.message_id) == message_id.lower(),
        )
    )  # fmt: skip
    return found


def _bounce_data(bounced: Sequence[BouncedAddress]) -> dict[str, object]:
    hard = any(item.hard for item in bounced)
    first = next((item for item in bounced if item.hard), bounced[0])
    return {
        "recipients": [item.address for item in bounced],
        "bounce": {"type": "hard" if hard else "soft", "status": first.status,
                   "diagnostic": first.diagnostic},
    }  # fmt: skip


def _mark(email: Email, addresses: Sequence[str], state: str, only_from: str | None = None) -> None:
    """What a report says of these recipients, in the email's recipient states (those it
    keeps; ``only_from``: only a recipient in that state changes)."""
    states = dict(email.recipient_states or {})
    changed = False
    for address in (each.lower() for each in addresses):
        if address in states and (only_from is None or states[address] == only_from):
            states[address] = state
            changed = True
    if changed:
        email.recipient_states = states  # a new dict: the JSON column sees the change


async def record_bounce(
    session: AsyncSession, clock: Clock, email: Email, bounced: Sequence[BouncedAddress]
) -> None:
    """``bounced`` are recipients of ``email`` the report says failed (never empty)."""
    record_email_event(session, clock, email, "bounced", _bounce_data(bounced))
    _mark(email, [item.address for item in bounced], "bounced")
    for item in bounced:
        if item.hard:
            await suppress(session, clock, email.team_id, item.address.lower(), "bounced", email.id)


def record_delay(
    session: AsyncSession, clock: Clock, email: Email, delayed: Sequence[BouncedAddress]
) -> None:
    """``delayed`` are recipients of ``email`` a remote server is still trying."""
    data = _bounce_data(delayed)
    record_email_event(session, clock, email, "delivery_delayed", data, update_status=False)
    _mark(email, [item.address for item in delayed], "delivery_delayed", only_from="delivered")


async def record_complaint(
    session: AsyncSession, clock: Clock, email: Email, recipient: str, feedback_type: str
) -> None:
    """``recipient``, a recipient of ``email``, complained about it."""
    team_id, recipient = email.team_id, recipient.lower()
    data = {"recipients": [recipient], "feedback_type": feedback_type}
    record_email_event(session, clock, email, "complained", data)
    _mark(email, [recipient], "complained")
    await suppress(session, clock, team_id, recipient, "complained", email.id)
    contacts = await session.scalars(
        select(Contact).where(Contact.team_id == team_id, Contact.email == recipient)
    )
    for contact in contacts.all():
        if not contact.unsubscribed:
            contact.unsubscribed = True
            contact.updated_at = clock.now()
            changes = {"unsubscribed": {"old": False, "new": True}}
            record_event(session, clock, team_id, "contact.updated",
                         {**event_data(contact), "changes": changes})  # fmt: skip


async def record_reply(
    session: AsyncSession, clock: Clock, team_id: str, email_id: str | None,
    received_email_id: str, from_address: str | None,
) -> Email | None:  # fmt: skip
    email = await _email(session, team_id, email_id)
    if email is None:
        return None
    data = {"received_email_id": received_email_id, "reply_from": from_address}
    record_email_event(session, clock, email, "replied", data, update_status=False)
    await engaged(session, clock, email, "replied")
    return email
