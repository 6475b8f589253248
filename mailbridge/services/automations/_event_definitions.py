"""Custom event definitions (spec §6.3): a name automations trigger on and wait for,
with an optional flat payload schema ``{field: "string" | "number" | "boolean" | "date"}``.

A definition is named by its id or its name (names never look like UUIDs). Names under
the built-in prefixes are the service's own events and cannot be defined. The name is
fixed once created: automations refer to it by name. :func:`payload_problems` checks a
sent event's payload against the schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import EventDefinition
from mailbridge.triggers import BUILT_IN_PREFIXES

FIELD_TYPES = ("string", "number", "boolean", "date")
MAX_EVENT_NAME_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 1000
MAX_FIELDS = 100
FIELD_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,100}")


def event_definition_view(definition: EventDefinition) -> dict[str, Any]:
    return {
        "object": "event",
        "id": definition.id,
        "name": definition.name,
        "description": definition.description,
        "schema": definition.schema,
        "created_at": isoformat_ms(definition.created_at),
        "updated_at": isoformat_ms(definition.updated_at),
    }


# -- checks -------------------------------------------------------------------------------


def check_name(name: object) -> str:
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_EVENT_NAME_LENGTH:
        raise ValidationError(f"`name` must be 1 to {MAX_EVENT_NAME_LENGTH} characters.")
    if any(char.isspace() for char in name):
        raise ValidationError("`name` cannot contain spaces.")
    if is_uuid(name):
        raise ValidationError("`name` cannot look like an id (a UUID).")
    if name.lower().startswith(BUILT_IN_PREFIXES):
        prefixes = ", ".join(BUILT_IN_PREFIXES)
        raise ValidationError(
            f"`name` {name} is a built-in event; names starting with {prefixes} are reserved."
        )
    return name


def check_description(description: object) -> str | None:
    if description is None:
        return None
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_LENGTH:
        raise ValidationError(
            f"`description` must be a string of at most {MAX_DESCRIPTION_LENGTH} characters."
        )
    return description


def check_schema(schema: object) -> dict[str, str] | None:
    """A flat ``{field: type}`` object; an empty one is no schema (any payload)."""
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise ValidationError("`schema` must be an object of `field: type` pairs, or null.")
    if len(schema) > MAX_FIELDS:
        raise ValidationError(f"`schema` declares at most {MAX_FIELDS} fields.")
    for field, kind in schema.items():
        if not FIELD_PATTERN.fullmatch(field):
            raise ValidationError(
                f"`schema` field {field!r} must be 1 to 100 letters, digits, `_` or `-`."
            )
        if kind not in FIELD_TYPES:
            raise ValidationError(
                f"`schema.{field}` must be one of {', '.join(FIELD_TYPES)}, not {kind!r}."
            )
    return dict(schema) or None


def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return False
    for parse in (date.fromisoformat, datetime.fromisoformat):
        try:
            parse(value)
        except ValueError:
            continue
        return True
    return False


def _has_type(value: object, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    if kind == "boolean":
        return isinstance(value, bool)
    return _is_date(value)


_EXPECTED = {
    "string": "a string",
    "number": "a number",
    "boolean": "true or false",
    "date": "an ISO 8601 date or date-time string",
}


def payload_problems(schema: Mapping[str, str] | None, payload: object) -> list[str]:
    """What is wrong with a sent event's ``payload`` under ``schema`` (empty: fine).

    Declared fields are optional (null counts as absent) but must have their type when
    present; undeclared fields are refused. Without a schema any object is fine."""
    if payload is None:
        return []
    if not isinstance(payload, dict):
        return ["`payload` must be an object"]
    if not schema:
        return []
    problems = []
    for field, value in payload.items():
        kind = schema.get(field)
        if kind is None:
            problems.append(f"unknown field {field}")
        elif value is not None and not _has_type(value, kind):
            problems.append(f"field {field} must be {_EXPECTED.get(kind, kind)}")
    return problems


# -- storage ------------------------------------------------------------------------------


def _name_taken(name: str) -> ValidationError:
    return ValidationError(f"An event named `{name}` already exists.")


async def find_definition(session: AsyncSession, team_id: str, id_or_name: str) -> EventDefinition:
    query = select(EventDefinition).where(EventDefinition.team_id == team_id)
    if is_uuid(id_or_name):
        query = query.where(EventDefinition.id == id_or_name)
    else:
        query = query.where(EventDefinition.name == id_or_name)
    definition = await session.scalar(query)
    if definition is None:
        raise NotFound("Event not found.")
    return definition


async def definition_named(
    session: AsyncSession, team_id: str, name: str
) -> EventDefinition | None:
    """The team's definition of ``name``, if any (for POST /events/send)."""
    found: EventDefinition | None = await session.scalar(
        select(EventDefinition).where(
            EventDefinition.team_id == team_id, EventDefinition.name == name
        )
    )
    return found


async def create_definition(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    name: object,
    description: object = None,
    schema: object = None,
) -> EventDefinition:
    checked, now = check_name(name), clock.now()
    definition = EventDefinition(
        team_id=team_id,
        name=checked,
        description=check_description(description),
        schema=check_schema(schema),
        created_at=now,
        updated_at=now,
    )
    if await definition_named(session, team_id, checked) is not None:
        raise _name_taken(checked)
    session.add(definition)
    try:
        await session.commit()
    except IntegrityError:  # a concurrent create of the same name won
        await session.rollback()
        raise _name_taken(checked) from None
    return definition


async def list_definitions(
    session: AsyncSession, team_id: str, page: PageRequest
) -> Page[EventDefinition]:
    query = select(EventDefinition).where(EventDefinition.team_id == team_id)
    return await paginate(session, query, EventDefinition, page)


async def update_definition(
    session: AsyncSession, clock: Clock, team_id: str, id_or_name: str, changes: dict[str, Any]
) -> EventDefinition:
    """Apply ``description`` and ``schema`` (null clears); the name is fixed."""
    definition = await find_definition(session, team_id, id_or_name)
    if "name" in changes and changes["name"] != definition.name:
        raise ValidationError("An event's `name` cannot be changed.")
    if "description" in changes:
        definition.description = check_description(changes["description"])
    if "schema" in changes:
        definition.schema = check_schema(changes["schema"])
    definition.updated_at = clock.now()
    await session.commit()
    return definition


async def delete_definition(session: AsyncSession, team_id: str, id_or_name: str) -> str:
    definition = await find_definition(session, team_id, id_or_name)
    await session.delete(definition)
    await session.commit()
    return definition.id
