"""Automations, their steps (stored vocabulary) and their runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.api.openapi import json_body
from mailbridge.engine.graph import Step
from mailbridge.engine.vocabulary import stored_view
from mailbridge.services import automations
from mailbridge.services.automations import (
    MAX_AUTOMATION_NAME_LENGTH,
    STATUSES,
    TRIGGER_CONFIG_FIELDS,
    NewAutomation,
    NewStep,
    automation_list_item,
    automation_view,
    graph_of,
    run_detail_view,
    run_view,
)
from mailbridge.wire import Absent, declared, trimmed

router = APIRouter(tags=["automations"])

# What the service's checks accept, for the document (they keep their own messages).
Name = Annotated[str, declared(pattern=trimmed(MAX_AUTOMATION_NAME_LENGTH))]
Status = Annotated[str, declared(enum=list(STATUSES))]
TRIGGER_CONFIG = declared(
    anyOf=[
        {
            "type": "object",
            "properties": {field: {"type": "boolean"} for field in TRIGGER_CONFIG_FIELDS},
            "additionalProperties": False,
        },
        {"type": "null"},
    ]
)
NOT_NULL = declared(**{"not": {"type": "null"}})


class AutomationFields(BaseModel):
    """The fields of an automation body; steps and connections stay raw for the graph
    check, which names every problem. A PATCH may leave any out, but null only
    ``trigger_config``; ``domain`` and ``audience_id`` cannot change."""

    name: Absent[Name] = None
    domain: Absent[str] = None
    audience_id: Absent[str] = None
    status: Absent[Status] = None
    trigger: Absent[str] = None
    trigger_config: Annotated[Any, TRIGGER_CONFIG] = None
    steps: Annotated[Any, NOT_NULL] = None
    connections: Annotated[Any, NOT_NULL] = None

    def changes(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in self.model_fields_set}


class CreateAutomation(AutomationFields):
    name: Name
    domain: str | None = None  # derived from the send steps when absent (Resend's SDKs)
    audience_id: str | None = None
    status: Status = "disabled"
    trigger: str | None = None
    steps: Any = None
    connections: Any = None


class CreateStep(BaseModel):
    type: str
    key: str | None = None
    config: Any = None
    after: str | None = None
    connection_type: str = "default"


class UpdateStep(BaseModel):
    key: str | None = None
    type: str | None = None
    config: Any = None

    def changes(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in self.model_fields_set}


@router.post("/automations", status_code=201, openapi_extra=json_body(CreateAutomation))
async def create_automation(
    principal: Writer, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, CreateAutomation)
    new = NewAutomation(
        name=body.name, domain=body.domain, audience_id=body.audience_id, status=body.status,
        trigger=body.trigger, trigger_config=body.trigger_config, steps=body.steps,
        connections=body.connections,
    )  # fmt: skip
    return automation_view(
        await automations.create_automation(session, context.clock, principal.team_id, new)
    )


@router.get("/automations")
async def list_automations(
    principal: Reader,
    session: SessionDep,
    page: PageDep,
    status: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    result = await automations.list_automations(session, principal.team_id, page, status)
    return list_body(result, automation_list_item)


@router.get("/automations/{automation_id}")
async def get_automation(
    automation_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    return automation_view(
        await automations.get_automation(session, principal.team_id, automation_id)
    )


@router.patch("/automations/{automation_id}", openapi_extra=json_body(AutomationFields))
async def update_automation(
    automation_id: str,
    principal: Writer,
    request: Request,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    body = await parse_body(request, AutomationFields)
    state = await automations.update_automation(
        session, context.clock, principal.team_id, automation_id, body.changes()
    )
    return automation_view(state)


@router.delete("/automations/{automation_id}")
async def delete_automation(
    automation_id: str, principal: Writer, session: SessionDep
) -> dict[str, Any]:
    deleted = await automations.delete_automation(session, principal.team_id, automation_id)
    return {"object": "automation", "id": deleted, "deleted": True}


@router.post("/automations/{automation_id}/stop")
async def stop_automation(
    automation_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    state = await automations.stop_automation(
        session, context.clock, principal.team_id, automation_id
    )
    return automation_view(state)


@router.post("/automations/{automation_id}/duplicate", status_code=201)
async def duplicate_automation(
    automation_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    state = await automations.duplicate_automation(
        session, context.clock, principal.team_id, automation_id
    )
    return automation_view(state)


# -- steps (stored vocabulary) ------------------------------------------------------------


def _stored(step: Step) -> dict[str, Any]:
    return stored_view(step)


@router.post(
    "/automations/{automation_id}/steps", status_code=201, openapi_extra=json_body(CreateStep)
)
async def add_step(
    automation_id: str,
    principal: Writer,
    request: Request,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    body = await parse_body(request, CreateStep)
    new = NewStep(body.type, body.key, body.config, body.after, body.connection_type)
    step = await automations.add_step(session, context.clock, principal.team_id, automation_id, new)
    return _stored(step)


@router.get("/automations/{automation_id}/steps/{step_id}")
async def get_step(
    automation_id: str, step_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    automation = await automations.find_automation(session, principal.team_id, automation_id)
    graph = await graph_of(session, automation)
    return _stored(automations.find_step(graph, step_id))


@router.patch("/automations/{automation_id}/steps/{step_id}", openapi_extra=json_body(UpdateStep))
async def update_step(
    automation_id: str,
    step_id: str,
    principal: Writer,
    request: Request,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    body = await parse_body(request, UpdateStep)
    step = await automations.update_step(
        session, context.clock, principal.team_id, automation_id, step_id, body.changes()
    )
    return _stored(step)


@router.delete("/automations/{automation_id}/steps/{step_id}")
async def delete_step(
    automation_id: str,
    step_id: str,
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    deleted = await automations.delete_step(
        session, context.clock, principal.team_id, automation_id, step_id
    )
    return {"object": "step", "id": deleted, "deleted": True}


# -- runs ---------------------------------------------------------------------------------


@router.get("/automations/{automation_id}/runs")
async def list_runs(
    automation_id: str,
    principal: Reader,
    session: SessionDep,
    page: PageDep,
    status: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    automation = await automations.find_automation(session, principal.team_id, automation_id)
    result = await automations.list_runs(session, automation, page, status)
    return list_body(result, run_view)


@router.get("/automations/{automation_id}/runs/{run_id}")
async def get_run(
    automation_id: str, run_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    automation = await automations.find_automation(session, principal.team_id, automation_id)
    return run_detail_view(await automations.get_run(session, automation, run_id))
