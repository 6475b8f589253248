"""Contacts: people in an audience, with their custom properties.

An email is stored lower-case and is unique within its audience. A contact is
named by its id (in any audience of the team) or by its email (within the audience
the caller names, else the team's default audience). Every write records
``contact.created``, ``contact.updated`` or ``contact.deleted`` in its own
transaction, checks the team's contact lock and is time-bound (``contact_lock``).
Bulk writes live in ``contact_batch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from email_validator import EmailNotValidError, validate_email
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import Conflict, NotFound, ValidationError
from mailbridge.services.audiences import _topics as topics
from mailbridge.services.audiences._audiences import default_audience_id, get_audience
from mailbridge.services.audiences._contact_filters import ContactFilters, filtered
from mailbridge.services.audiences._contact_lock import single_contact_write
from mailbridge.services.audiences._properties import (
    check_contact_properties,
    check_date_shape,
    registered_properties,
)
from mailbridge.services.kernel import record_event
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Audience, Contact, ContactProperty, Segment, SegmentMember
from mailbridge.storage.types import new_id
from mailbridge.wire import EmailAddress

MAX_NAME_LENGTH = 200


class ContactFields(BaseModel):
    """What a write may set; a field left out (or ``null`` where noted) stays as it is."""

    model_config = ConfigDict(extra="ignore")

    first_name: str | None = Field(default=None, max_length=MAX_NAME_LENGTH)
    last_name: str | None = Field(default=None, max_length=MAX_NAME_LENGTH)
    unsubscribed: StrictBool | None = None  # null: unchanged
    # Merged into the stored ones; a key set to null is removed.
    properties: dict[str, Any] | None = None


class NewContact(ContactFields):
    email: EmailAddress = Field(max_length=320)


class ContactChanges(ContactFields):
    # Repeats the address that names the contact (the Resend SDK sends it); never a new one.
    email: EmailAddress | None = None


class TopicChoice(BaseModel):
    id: str
    subscription: Literal["opt_in", "opt_out"]


def normalize_email(raw: str, label: str = "email") -> str:
    """A syntactically valid address, lower-cased (how contacts store and match it)."""
    try:
        checked = validate_email(raw.strip(), check_deliverability=False)
    except EmailNotValidError as exc:
        raise ValidationError(f"`{label}` is not a valid email address: {exc}") from None
    return checked.normalized.lower()


def _inferred_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "date" if isinstance(value, str) and check_date_shape(value) else "string"


def property_views(
    values: Mapping[str, Any], registry: Mapping[str, ContactProperty] | None = None
) -> dict[str, dict[str, Any]]:
    """Stored values as Resend shows them, ``{key: {value, type}}``.

    The type is the registered one; without the registry at hand it is read off the
    value (a stored date is always in one of its two normalized shapes).
    """
    if registry is None:
        return {key: {"value": v, "type": _inferred_type(v)} for key, v in values.items()}
    return {
        key: {"value": value, "type": registry[key].type}
        for key, value in values.items()
        if key in registry
    }


def contact_view(
    contact: Contact, registry: Mapping[str, ContactProperty] | None = None
) -> dict[str, Any]:
    return {
        "object": "contact",
        "id": contact.id,
        "audience_id": contact.audience_id,
        "email": contact.email,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "unsubscribed": contact.unsubscribed,
        "properties": property_views(contact.properties or {}, registry),
        "created_at": isoformat_ms(contact.created_at),
        "updated_at": isoformat_ms(contact.updated_at),
    }


def event_data(contact: Contact) -> dict[str, Any]:
    """What ``contact.*`` activity events carry: the contact as it is (or was).

    Properties are plain values here, as automation conditions read them.
    """
    return {
        "id": contact.id,
        "audience_id": contact.audience_id,
        "email": contact.email,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "unsubscribed": contact.unsubscribed,
        "properties": dict(contact.properties or {}),
        "created_at": isoformat_ms(contact.created_at),
        "updated_at": isoformat_ms(contact.updated_at),
    }


def apply_changes(
    contact: Contact, fields: ContactFields, properties: Mapping[str, Any], now: datetime
) -> dict[str, dict[str, Any]]:
    """Apply the fields a write set to ``contact``; what changed, as ``{field: {old, new}}``.

    ``properties`` are the write's properties already checked (``None`` = remove).
    """
    changes: dict[str, dict[str, Any]] = {}
    given = fields.model_fields_set
    wanted: dict[str, Any] = {}
    for name in ("first_name", "last_name"):
        if name in given:
            wanted[name] = getattr(fields, name)
    if fields.unsubscribed is not None:
        wanted["unsubscribed"] = fields.unsubscribed
    if properties:
        merged = dict(contact.properties or {})
        for key, value in properties.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        wanted["properties"] = merged
    for name, value in wanted.items():
        old = getattr(contact, name)
        if old != value:
            changes[name] = {"old": old, "new": value}
            setattr(contact, name, value)
    if changes:
        contact.updated_at = now
    return changes


def new_contact_row(
    team_id: str, audience_id: str, email: str, fields: ContactFields,
    properties: Mapping[str, Any], now: datetime,
) -> Contact:  # fmt: skip
    return Contact(
        id=new_id(),
        team_id=team_id,
        audience_id=audience_id,
        email=email,
        first_name=fields.first_name,
        last_name=fields.last_name,
        unsubscribed=bool(fields.unsubscribed),
        properties={key: value for key, value in properties.items() if value is not None},
        created_at=now,
        updated_at=now,
    )


async def list_contacts(
    session: AsyncSession, team_id: str, filters: ContactFilters, page: PageRequest
) -> Page[Contact]:
    if filters.audience_id is not None:
        await get_audience(session, team_id, filters.audience_id)
    query = filtered(select(Contact).where(Contact.team_id == team_id), filters)
    return await paginate(session, query, Contact, page)


async def find_contact(
    session: AsyncSession, team_id: str, id_or_email: str, audience_id: str | None = None
) -> Contact:
    """The contact named by id or email (404 otherwise); see the module docstring."""
    query = select(Contact).where(Contact.team_id == team_id)
    if is_uuid(id_or_email):
        query = query.where(Contact.id == id_or_email)
        if audience_id is not None:
            query = query.where(Contact.audience_id == audience_id)
    else:
        email = id_or_email.strip().lower()
        query = query.where(
            Contact.email == email,
            Contact.audience_id == (audience_id or default_audience_id(team_id)),
        )
    contact = await session.scalar(query)
    if contact is None:
        raise NotFound("Contact not found.")
    return contact


async def _exists(session: AsyncSession, audience_id: str, email: str) -> bool:
    found = await session.scalar(
        select(Contact.id).where(Contact.audience_id == audience_id, Contact.email == email)
    )
    return found is not None


def _duplicate(email: str) -> Conflict:
    return Conflict(
        "contact_exists", f"A contact with email {email} already exists in this audience."
    )


async def checked_segments(
    session: AsyncSession, team_id: str, audience_id: str, segment_ids: Sequence[str]
) -> list[str]:
    wanted = list(dict.fromkeys(segment_ids))
    if not wanted:
        return []
    found = {
        segment.id: segment
        for segment in await session.scalars(
            select(Segment).where(Segment.team_id == team_id, Segment.id.in_(wanted))
        )
    }
    for segment_id in wanted:
        segment = found.get(segment_id)
        if segment is None:
            raise NotFound(f"Segment {segment_id} not found.")
        if segment.audience_id != audience_id:
            raise ValidationError(f"Segment {segment_id} belongs to another audience.")
    return wanted


async def create_contact(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    audience: Audience,
    new: NewContact,
    *,
    topic_choices: Sequence[TopicChoice] = (),
    segment_ids: Sequence[str] = (),
    time_limit: float | None = None,
) -> Contact:
    """Create a contact (409 ``contact_exists`` for an email already in the audience)."""
    email = normalize_email(new.email)
    registry = await registered_properties(session, team_id)
    properties = check_contact_properties(new.properties or {}, registry)
    choices = await topics.checked_choices(
        session, team_id, [(choice.id, choice.subscription) for choice in topic_choices]
    )
    segments = await checked_segments(session, team_id, audience.id, segment_ids)
    if await _exists(session, audience.id, email):
        raise _duplicate(email)
    try:
        async with single_contact_write(session, clock, team_id, time_limit):
            now = clock.now()
            contact = new_contact_row(team_id, audience.id, email, new, properties, now)
            session.add(contact)
            await session.flush()
            topics.add_choices(session, contact.id, choices, now)
            session.add_all(
                SegmentMember(segment_id=segment_id, contact_id=contact.id, created_at=now)
                for segment_id in segments
            )
            record_event(session, clock, team_id, "contact.created", event_data(contact))
            await session.flush()
    except IntegrityError:
        await session.rollback()
        if await _exists(session, audience.id, email):
            raise _duplicate(email) from None
        raise
    await session.commit()
    return contact


async def update_contact(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    contact: Contact,
    changes: ContactChanges,
    *,
    time_limit: float | None = None,
) -> Contact:
    """Apply ``changes``; records ``contact.updated`` only when something changed."""
    if changes.email is not None and normalize_email(changes.email) != contact.email:
        raise ValidationError("`email` names the contact and cannot be changed.")
    registry = await registered_properties(session, team_id)
    properties = check_contact_properties(changes.properties or {}, registry)
    async with single_contact_write(session, clock, team_id, time_limit):
        changed = apply_changes(contact, changes, properties, clock.now())
        if changed:
            data = {**event_data(contact), "changes": changed}
            record_event(session, clock, team_id, "contact.updated", data)
        await session.flush()
    await session.commit()
    return contact


async def delete_contact(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    contact: Contact,
    *,
    time_limit: float | None = None,
) -> None:
    """Delete a contact; its topic choices and segment memberships go with it."""
    async with single_contact_write(session, clock, team_id, time_limit):
        data = event_data(contact)
        await session.execute(delete(Contact).where(Contact.id == contact.id))
        record_event(session, clock, team_id, "contact.deleted", data)
        await session.flush()
    await session.commit()
