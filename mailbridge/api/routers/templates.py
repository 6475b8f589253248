"""Templates: CRUD by id or alias, publish and duplicate (Resend's paths and shapes)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.errors import ValidationError
from mailbridge.mail.templating import Variable
from mailbridge.services import templates
from mailbridge.services.templates import (
    TemplateChanges,
    TemplateContent,
    template_list_item,
    template_view,
)

router = APIRouter(tags=["templates"])


class VariableBody(BaseModel):
    key: str
    type: str
    fallback_value: Any = None

    def to_variable(self) -> Variable:
        return Variable(self.key, self.type, self.fallback_value)


class TemplateFields(BaseModel):
    """The fields of a template body; which are required depends on the route."""

    name: str | None = None
    html: str | None = None
    alias: str | None = None
    from_address: str | None = Field(default=None, alias="from")
    subject: str | None = None
    reply_to: str | list[str] | None = None
    text: str | None = None
    variables: list[VariableBody] | None = None


class CreateTemplate(TemplateFields):
    name: str
    html: str


def _reference(template_id: str) -> dict[str, Any]:
    return {"id": template_id, "object": "template"}


def _changes(body: TemplateFields) -> TemplateChanges:
    """The fields the body carries; an explicit null clears an optional one."""
    given = body.model_fields_set
    changes = TemplateChanges()
    for required in ("name", "html"):
        if required in given and getattr(body, required) is None:
            raise ValidationError(f"`{required}` cannot be null.")
    if body.name is not None:
        changes["name"] = body.name
    if body.html is not None:
        changes["html"] = body.html
    if "alias" in given:
        changes["alias"] = body.alias
    if "from_address" in given:
        changes["from_address"] = body.from_address
    if "subject" in given:
        changes["subject"] = body.subject
    if "reply_to" in given:
        changes["reply_to"] = body.reply_to
    if "text" in given:
        changes["text"] = body.text
    if "variables" in given:
        changes["variables"] = [item.to_variable() for item in body.variables or ()]
    return changes


@router.post("/templates", status_code=201)
async def create_template(
    principal: Writer, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, CreateTemplate)
    content = TemplateContent(
        name=body.name,
        html=body.html,
        from_address=body.from_address,
        subject=body.subject,
        reply_to=templates.normalize_reply_to(body.reply_to),
        text=body.text,
        variables=tuple(item.to_variable() for item in body.variables or ()),
    )
    state = await templates.create_template(
        session, context.clock, principal.team_id, content, body.alias
    )
    return _reference(state.template.id)


@router.get("/templates")
async def list_templates(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await templates.list_templates(session, principal.team_id, page)
    return list_body(result, template_list_item)


@router.get("/templates/{id_or_alias}")
async def get_template(principal: Reader, id_or_alias: str, session: SessionDep) -> dict[str, Any]:
    return template_view(await templates.get_template(session, principal.team_id, id_or_alias))


@router.patch("/templates/{id_or_alias}")
async def update_template(
    principal: Writer,
    id_or_alias: str,
    request: Request,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    body = await parse_body(request, TemplateFields)
    state = await templates.update_template(
        session, context.clock, principal.team_id, id_or_alias, _changes(body)
    )
    return _reference(state.template.id)


@router.post("/templates/{id_or_alias}/publish")
async def publish_template(
    principal: Writer, id_or_alias: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    state = await templates.publish_template(session, context.clock, principal.team_id, id_or_alias)
    return _reference(state.template.id)


@router.post("/templates/{id_or_alias}/duplicate", status_code=201)
async def duplicate_template(
    principal: Writer, id_or_alias: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    state = await templates.duplicate_template(
        session, context.clock, principal.team_id, id_or_alias
    )
    return _reference(state.template.id)


@router.delete("/templates/{id_or_alias}")
async def delete_template(
    principal: Writer, id_or_alias: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    template_id = await templates.delete_template(
        session, context.clock, principal.team_id, id_or_alias
    )
    return {"object": "template", "id": template_id, "deleted": True}
