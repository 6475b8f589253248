"""Custom event definitions, named by id or by name (``POST /events/send`` is in
``event_intake``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import automations
from mailbridge.services.automations import event_definition_view

router = APIRouter(tags=["events"])


class DefinitionFields(BaseModel):
    name: Any = None
    description: Any = None
    # ``schema`` would shadow a BaseModel attribute
    payload_schema: Any = Field(default=None, alias="schema")

    def changes(self) -> dict[str, Any]:
        names = {"payload_schema": "schema"}
        return {names.get(field, field): getattr(self, field) for field in self.model_fields_set}


class CreateDefinition(DefinitionFields):
    name: Any


@router.post("/events", status_code=201)
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


@router.patch("/events/{id_or_name}")
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
