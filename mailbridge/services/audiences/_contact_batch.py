"""``POST /contacts/batch``: up to 1,000 contacts created or updated at once.

Create-or-update by email within the audience, all or nothing: every item is
checked before anything is written (an invalid one is a 422 naming its index), and
the writes share one transaction, under the team's contact lock and within the
contact write time bound (``contact_lock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ApiError, ContactsBusy, ValidationError
from mailbridge.services.audiences._contact_lock import holding_contact_lock, time_bound
from mailbridge.services.audiences._contacts import (
    ContactFields,
    NewContact,
    apply_changes,
    event_data,
    new_contact_row,
    normalize_email,
)
from mailbridge.services.audiences._properties import (
    check_contact_properties,
    registered_properties,
)
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.storage.tables import Audience, Contact, ContactProperty

MAX_CONTACT_BATCH_SIZE = 1000
MAX_PROBLEMS_TOLD = 10
# Stay far below every backend's limit on bound parameters per statement.
_LOOKUP_CHUNK = 500


@dataclass(frozen=True)
class PreparedContact:
    """One item, checked: its stored email and its normalized properties."""

    item: NewContact
    email: str
    properties: Mapping[str, Any]


@dataclass(frozen=True)
class BatchOutcome:
    contact: Contact
    action: str  # created updated unchanged


def prepare_batch(
    items: Sequence[NewContact], registry: Mapping[str, ContactProperty]
) -> list[PreparedContact]:
    """Check every item; one 422 tells the problems (by index) if any item is invalid."""
    if not 1 <= len(items) <= MAX_CONTACT_BATCH_SIZE:
        raise ValidationError(f"A batch holds 1 to {MAX_CONTACT_BATCH_SIZE} contacts.")
    prepared: list[PreparedContact] = []
    problems: list[str] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"contacts[{index}]"
        try:
            email = normalize_email(item.email, f"{where}.email")
            properties = check_contact_properties(
                item.properties or {}, registry, f"{where}.properties"
            )
        except ApiError as problem:
            problems.append(problem.message)
            continue
        if email in first_index:
            problems.append(f"`{where}.email` repeats contacts[{first_index[email]}] ({email}).")
            continue
        first_index[email] = index
        prepared.append(PreparedContact(item, email, properties))
    if problems:
        told = "; ".join(problems[:MAX_PROBLEMS_TOLD])
        more = len(problems) - MAX_PROBLEMS_TOLD
        suffix = f"; and {more} more" if more > 0 else ""
        raise ValidationError(
            f"No contact was written: {len(problems)} invalid item(s): {told}{suffix}."
        )
    return prepared


async def existing_contacts(
    session: AsyncSession, audience_id: str, emails: list[str]
) -> dict[str, Contact]:
    """The audience's contacts among ``emails`` (stored lower-case), by email."""
    found: dict[str, Contact] = {}
    for start in range(0, len(emails), _LOOKUP_CHUNK):
        chunk = emails[start : start + _LOOKUP_CHUNK]
        rows = await session.scalars(
            select(Contact).where(Contact.audience_id == audience_id, Contact.email.in_(chunk))
        )
        found.update((contact.email, contact) for contact in rows)
    return found


async def upsert_contacts(
    session: AsyncSession,
    context: ServiceContext,
    team_id: str,
    audience: Audience,
    items: Sequence[NewContact],
) -> list[BatchOutcome]:
    """Create or update every item in ``audience``; outcomes in the items' order."""
    prepared = prepare_batch(items, await registered_properties(session, team_id))
    clock = context.clock
    outcomes: list[BatchOutcome] = []
    try:
        async with holding_contact_lock(session, context, team_id):
            async with time_bound(session, context.settings.contacts_write_timeout):
                emails = [p.email for p in prepared]
                existing = await existing_contacts(session, audience.id, emails)
                now = clock.now()
                for entry in prepared:
                    found = existing.get(entry.email)
                    outcome = write_contact(
                        session, clock, team_id, audience.id, found, entry.email,
                        entry.item, entry.properties, now,
                    )  # fmt: skip
                    outcomes.append(outcome)
                await session.flush()
            await session.commit()
    except IntegrityError:
        # A single write that looked at the lock just before we took it created one
        # of these emails; everything was rolled back, and a retry will update it.
        raise ContactsBusy(
            "A concurrent contact write got in the way; nothing was written.", retry_after=1
        ) from None
    return outcomes


def write_contact(
    session: AsyncSession, clock: Clock, team_id: str, audience_id: str,
    contact: Contact | None, email: str, item: ContactFields,
    properties: Mapping[str, Any], now: datetime,
) -> BatchOutcome:  # fmt: skip
    """Create the contact (``contact`` None) or apply ``item`` to it, with its
    ``contact.created`` or ``contact.updated`` event; ``properties`` already checked."""
    if contact is None:
        contact = new_contact_row(team_id, audience_id, email, item, properties, now)
        session.add(contact)
        record_event(session, clock, team_id, "contact.created", event_data(contact))
        return BatchOutcome(contact, "created")
    changed = apply_changes(contact, item, properties, now)
    if changed:
        data = {**event_data(contact), "changes": changed}
        record_event(session, clock, team_id, "contact.updated", data)
    return BatchOutcome(contact, "updated" if changed else "unchanged")


def outcome_view(outcome: BatchOutcome) -> dict[str, Any]:
    return {
        "object": "contact",
        "id": outcome.contact.id,
        "email": outcome.contact.email,
        "action": outcome.action,
    }
