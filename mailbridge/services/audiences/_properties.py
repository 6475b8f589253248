"""Contact properties: the custom keys a team registers, and the check of contact values.

A property has a key (letters, digits, ``_``; at most 50), a type (``string``,
``number``, ``boolean``, ``date``) and an optional fallback value of that type. Key
and type are fixed once created. Every contact write checks its ``properties``
against the registered ones; dates are stored normalized (``YYYY-MM-DD``, or a UTC
timestamp with milliseconds). Deleting a property removes its values from every
contact of the team.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import JSON, cast, func, select, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import Conflict, ValidationError
from mailbridge.services.audiences._contact_lock import holding_contact_lock, time_bound
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned, is_postgres
from mailbridge.storage.tables import Contact, ContactProperty
from mailbridge.wire import END

PROPERTY_TYPES = ("string", "number", "boolean", "date")
KEY_PATTERN = re.compile(r"[A-Za-z0-9_]{1,50}")
# The contact's own fields: a property of the same name would shadow them in
# templates, segments and automation conditions.
RESERVED_KEYS = frozenset(
    {"id", "email", "first_name", "last_name", "unsubscribed", "audience_id", "created_at",
     "updated_at", "properties"}
)  # fmt: skip
MAX_STRING_LENGTH = 2000


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


# What ``check_key`` accepts, for the OpenAPI document: KEY_PATTERN, not a reserved key.
PROPERTY_KEY_SCHEMA: dict[str, Any] = {
    "pattern": rf"^[A-Za-z0-9_]{{1,50}}{END}",
    "not": {"pattern": f"^(?:{'|'.join(sorted(map(_any_case, RESERVED_KEYS)))})$"},
}


def check_key(key: str) -> str:
    if not KEY_PATTERN.fullmatch(key):
        raise ValidationError(
            "`key` must be 1 to 50 characters: letters, digits and underscores only."
        )
    if key.lower() in RESERVED_KEYS:
        raise ValidationError(f"`key` `{key}` is reserved for the contact's own field.")
    return key


def check_type(property_type: str) -> str:
    if property_type not in PROPERTY_TYPES:
        raise ValidationError(f"`type` must be one of {', '.join(PROPERTY_TYPES)}.")
    return property_type


_STORED_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}\.\d{3}Z)?")


def check_date_shape(value: str) -> bool:
    """Whether ``value`` has the shape dates are stored in (see ``check_value``)."""
    return _STORED_DATE.fullmatch(value) is not None


def _normalized_date(text: str) -> str | None:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        return None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return isoformat_ms(instant)


def check_value(property_type: str, value: Any, label: str) -> Any:
    """``value`` as stored for a property of ``property_type``, or 422 naming ``label``."""
    if property_type == "string":
        if not isinstance(value, str):
            raise ValidationError(f"`{label}` must be a string.")
        if len(value) > MAX_STRING_LENGTH:
            raise ValidationError(f"`{label}` must be at most {MAX_STRING_LENGTH} characters.")
        return value
    if property_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(f"`{label}` must be a number.")
        if not math.isfinite(value):
            raise ValidationError(f"`{label}` must be a finite number.")
        return value
    if property_type == "boolean":
        if not isinstance(value, bool):
            raise ValidationError(f"`{label}` must be true or false.")
        return value
    normalized = _normalized_date(value) if isinstance(value, str) else None
    if normalized is None:
        raise ValidationError(f"`{label}` must be an ISO 8601 date or date-time string.")
    return normalized


def check_contact_properties(
    values: Mapping[str, Any], registry: Mapping[str, ContactProperty], where: str = "properties"
) -> dict[str, Any]:
    """A contact write's ``properties``, checked and normalized; ``None`` means "remove"."""
    checked: dict[str, Any] = {}
    for key, value in values.items():
        registered = registry.get(key)
        if registered is None:
            raise ValidationError(
                f"`{where}.{key}` is not a registered contact property; "
                "register it with POST /contact-properties first."
            )
        label = f"{where}.{key}"
        checked[key] = None if value is None else check_value(registered.type, value, label)
    return checked


def contact_property_view(prop: ContactProperty) -> dict[str, Any]:
    return {
        "object": "contact_property",
        "id": prop.id,
        "key": prop.key,
        "type": prop.type,
        "fallback_value": prop.fallback_value,
        "created_at": isoformat_ms(prop.created_at),
    }


async def registered_properties(session: AsyncSession, team_id: str) -> dict[str, ContactProperty]:
    """Every property the team registered, by key."""
    rows = await session.scalars(select(ContactProperty).where(ContactProperty.team_id == team_id))
    return {prop.key: prop for prop in rows}


async def create_property(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    key: str,
    property_type: str,
    fallback_value: Any = None,
) -> ContactProperty:
    key, property_type = check_key(key), check_type(property_type)
    if fallback_value is not None:
        fallback_value = check_value(property_type, fallback_value, "fallback_value")
    exists = await session.scalar(
        select(ContactProperty.id).where(
            ContactProperty.team_id == team_id, ContactProperty.key == key
        )
    )
    duplicate = Conflict("contact_property_exists", f"A contact property `{key}` already exists.")
    if exists is not None:
        raise duplicate
    now = clock.now()
    prop = ContactProperty(
        team_id=team_id,
        key=key,
        type=property_type,
        fallback_value=fallback_value,
        created_at=now,
        updated_at=now,
    )
    session.add(prop)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise duplicate from None
    return prop


async def list_properties(
    session: AsyncSession, team_id: str, page: PageRequest
) -> Page[ContactProperty]:
    query = select(ContactProperty).where(ContactProperty.team_id == team_id)
    return await paginate(session, query, ContactProperty, page)


async def get_property(session: AsyncSession, team_id: str, property_id: str) -> ContactProperty:
    return await get_owned(session, ContactProperty, team_id, property_id, "Contact property")


async def update_property(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    property_id: str,
    changes: Mapping[str, Any],
) -> ContactProperty:
    """Change the fallback value; ``key`` and ``type`` may be repeated but not changed."""
    prop = await get_property(session, team_id, property_id)
    for fixed in ("key", "type"):
        if fixed in changes and changes[fixed] != getattr(prop, fixed):
            raise ValidationError(f"`{fixed}` cannot be changed once the property exists.")
    if "fallback_value" in changes:
        value = changes["fallback_value"]
        if value is not None:
            value = check_value(prop.type, value, "fallback_value")
        prop.fallback_value = value
        prop.updated_at = clock.now()
    await session.commit()
    return prop


async def delete_property(
    session: AsyncSession, context: ServiceContext, team_id: str, property_id: str
) -> ContactProperty:
    """Unregister a property and erase its values from the team's contacts, in SQL."""
    prop = await get_property(session, team_id, property_id)
    async with holding_contact_lock(session, context, team_id):
        async with time_bound(session, context.settings.contacts_write_timeout):
            await session.execute(_erase_values(session, team_id, prop.key))
            await session.delete(prop)
            await session.flush()
        await session.commit()
    return prop


def _erase_values(session: AsyncSession, team_id: str, key: str) -> Any:
    contacts = update(Contact).execution_options(synchronize_session=False)
    if is_postgres(session):
        stored = cast(Contact.properties, JSONB)
        return contacts.where(Contact.team_id == team_id, stored.has_key(key)).values(
            properties=cast(stored.op("-", return_type=JSONB)(key), JSON)
        )
    path = f'$."{key}"'  # keys are letters, digits and "_": nothing to escape
    return contacts.where(
        Contact.team_id == team_id, func.json_type(Contact.properties, path).is_not(None)
    ).values(properties=func.json_remove(Contact.properties, path))
