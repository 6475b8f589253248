"""What a recipient's open, click or unsubscribe does to the email and its contact.

- Every open and every click is an event (and an ``email.opened`` / ``email.clicked``
  activity). The status moves to ``opened`` on the first open only and to
  ``clicked`` on every click: a later open never turns a clicked email back into an
  opened one, and engagement never hides a bounce or complaint (``email_events``).
- An email of a campaign sent to a contact also fills ``contact_engagements`` (the
  first open or click per contact and campaign), which engagement segments read. A
  click counts as an open there too: the recipient evidently opened the email.
- An unsubscribe sets ``unsubscribed`` on the email's contact or, for an email sent
  to no contact, on every contact of the team with one of its ``to`` addresses, and
  records ``contact.updated``. It does not suppress the address: transactional mail
  still reaches it, while marketing sends skip unsubscribed contacts. It does not
  wait for a bulk contact write's lock either: one flag must never be refused. From a
  campaign's email, it is also that campaign's ``unsubscribed`` engagement (its count).
"""

from __future__ import annotations

from email.utils import getaddresses
from typing import Any

from sqlalchemy import literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.services.audiences import event_data
from mailbridge.services.email._events import record_email_event
from mailbridge.services.kernel import record_event
from mailbridge.storage.queries import is_postgres
from mailbridge.storage.tables import Contact, ContactEngagement, Email

ENGAGED = frozenset({"opened", "clicked"})


async def record_open(session: AsyncSession, clock: Clock, email_id: str) -> bool:
    """Record an open of ``email_id``; False when there is no such email (any more)."""
    email = await session.get(Email, email_id)
    if email is None:
        return False
    first_open = email.status not in ENGAGED
    record_email_event(session, clock, email, "opened", update_status=first_open)
    await engaged(session, clock, email, "opened")
    await session.commit()
    return True


async def record_click(
    session: AsyncSession,
    clock: Clock,
    email_id: str,
    url: str,
    *,
    ip_address: str | None = None,
    user_agent: str | None = None,
) -> bool:
    """Record a click on ``url`` in ``email_id`` (its data as Resend's ``click`` object)."""
    email = await session.get(Email, email_id)
    if email is None:
        return False
    click: dict[str, Any] = {"link": url, "timestamp": isoformat_ms(clock.now())}
    if ip_address:
        click["ipAddress"] = ip_address
    if user_agent:
        click["userAgent"] = user_agent
    record_email_event(session, clock, email, "clicked", {"click": click})
    await engaged(session, clock, email, "opened")
    await engaged(session, clock, email, "clicked")
    await session.commit()
    return True


async def engaged(session: AsyncSession, clock: Clock, email: Email, kind: str) -> None:
    """The contact's first ``kind`` of the campaign, if this is the first (else nothing)."""
    if email.campaign_id is None or email.contact_id is None:
        return
    insert = pg_insert if is_postgres(session) else sqlite_insert
    # Selected from contacts, so a contact deleted since the send adds nothing.
    source = select(
        Contact.id,
        literal(email.campaign_id),
        literal(kind),
        Contact.team_id,
        literal(clock.now(), type_=ContactEngagement.__table__.c.first_at.type),
    ).where(Contact.id == email.contact_id, Contact.team_id == email.team_id)
    await session.execute(
        insert(ContactEngagement)
        .from_select(["contact_id", "campaign_id", "kind", "team_id", "first_at"], source)
        .on_conflict_do_nothing()
    )


async def unsubscribe(session: AsyncSession, clock: Clock, email_id: str) -> bool:
    """Unsubscribe the recipient of ``email_id``; False when there is no such email."""
    email = await session.get(Email, email_id)
    if email is None:
        return False
    for contact in await _recipients(session, email):
        if contact.unsubscribed:
            continue
        contact.unsubscribed = True
        contact.updated_at = clock.now()
        data = {**event_data(contact), "changes": {"unsubscribed": {"old": False, "new": True}}}
        record_event(session, clock, contact.team_id, "contact.updated", data)
    await engaged(session, clock, email, "unsubscribed")
    await session.commit()
    return True


async def _recipients(session: AsyncSession, email: Email) -> list[Contact]:
    if email.contact_id is not None:
        contact = await session.scalar(
            select(Contact).where(Contact.id == email.contact_id, Contact.team_id == email.team_id)
        )
        if contact is not None:
            return [contact]
    addresses = sorted({address.lower() for _name, address in getaddresses(email.to) if address})
    if not addresses:
        return []
    contacts = await session.scalars(
        select(Contact)
        .where(Contact.team_id == email.team_id, Contact.email.in_(addresses))
        .order_by(Contact.id)
    )
    return list(contacts.all())
