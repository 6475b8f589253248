"""Custom event definitions, named by id or by name (``POST /events/send`` is in
``event_intake``)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.api.openapi import json_body
from mailbridge.services import automations
from mailbridge.services.automations import (
    FIELD_PATTERN,
    FIELD_TYPES,
    MAX_DESCRIPTION_LENGTH,
    MAX_EVENT_NAME_LENGTH,
    MAX_FIELDS,
    event_definition_view,
)
from mailbridge.triggers import BUILT_IN_PREFIXES
from mailbridge.wire import END, SPACE, UUID_TEXT, declared

router = APIRouter(tags=["events"])


def _any_case(text: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in text)


# What the definitions service's checks accept, for the document (the fields stay raw:
# the service names each problem). A name has no whitespace, is no UUID and is not under
# a built-in prefix (in any case).
NAME = {
    "type": "string",
    "pattern": rf"^[^{SPACE}]{{1,{MAX_EVENT_NAME_LENGTH}}}{END}",
    "not": {
        "anyOf": [
            {"pattern": f"^{UUID_TEXT}{END}"},
            {"pattern": "^(?:" + "|".join(_any_case(p) for p in BUILT_IN_PREFIXES) + ")"},
        ]
    },
}
DESCRIPTION = {"anyOf": [{"type": "string", "maxLength": MAX_DESCRIPTION_LENGTH}, {"type": "null"}]}
PAYLOAD_SCHEMA = {
    "anyOf": [
        {
            "type": "object",
            "maxProperties": MAX_FIELDS,
            "propertyNames": {"pattern": f"^{FIELD_PATTERN.pattern}{END}"},
            "additionalProperties": {"enum": list(FIELD_TYPES)},
        },
        {"type": "null"},
    ]
}


class DefinitionFields(BaseModel):
    """PATCH /events/{id_or_name}: ``description`` and ``schema`` (null clears); ``name``
    cannot change."""

    name: Annotated[Any, declared(**NAME)] = None
    description: Annotated[Any, declared(**DESCRIPTION)] = None
    # ``schema`` would shadow a BaseModel attribute
    payload_schema: Annotated[Any, declared(**PAYLOAD_SCHEMA)] = Field(default=None, alias="schema")

    def changes(self) -> dict[str, Any]:
        names = {"payload_schema": "schema"}
        return {names.get(field, field): getattr(self, field) for field in self.model_fields_set}


class CreateDefinition(DefinitionFields):
    """POST /events."""

    name: Annotated[Any, declared(**NAME)]


@router.post("/events", status_code=201, openapi_extra=json_body(CreateDefinition))
async def create_event(
    principal: Writer, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, CreateDefinition)
    definition = await automations.create_definition(
        session, context.clock, principal.team_id, body.name, body.description,
        body.payload_schema,
    )  # fmt: skip
    return event_definition_view(definition)


@router.get("/events")
async def list_events(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await automations.list_definitions(session, principal.team_id, page)
    return list_body(result, event_definition_view)


@router.get("/events/{id_or_name}")
async def get_event(id_or_name: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    definition = await automations.find_definition(session, principal.team_id, id_or_name)
    return event_definition_view(definition)


@router.patch("/events/{id_or_name}", openapi_extra=json_body(DefinitionFields))
async def update_event(
    id_or_name: str,
    principal: Writer,
    request: Request,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    body = await parse_body(request, DefinitionFields)
    definition = await automations.update_definition(
        session, context.clock, principal.team_id, id_or_name, body.changes()
    )
    return event_definition_view(definition)


@router.delete("/events/{id_or_name}")
async def delete_event(id_or_name: str, principal: Writer, session: SessionDep) -> dict[str, Any]:
    deleted = await automations.delete_definition(session, principal.team_id, id_or_name)
    return {"object": "event", "id": deleted, "deleted": True}
