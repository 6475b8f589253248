"""Templates: CRUD by id or alias, publish and duplicate (Resend's paths and shapes)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.api.openapi import json_body
from mailbridge.errors import ValidationError
from mailbridge.mail.templating import (
    MAX_KEY_LENGTH,
    MAX_VARIABLES,
    RESERVED_KEYS,
    VARIABLE_TYPES,
    Variable,
)
from mailbridge.services import templates
from mailbridge.services.templates import (
    ADDRESS_PATTERN,
    MAX_ALIAS_LENGTH,
    MAX_FROM_LENGTH,
    MAX_REPLY_TO,
    MAX_SUBJECT_LENGTH,
    MAX_TEMPLATE_NAME_LENGTH,
    TemplateChanges,
    TemplateContent,
    template_list_item,
    template_view,
)
from mailbridge.wire import END, SPACE, UUID_TEXT, Absent, declared, trimmed

router = APIRouter(tags=["templates"])

# What the templates service's checks accept, for the document (they keep their own
# messages). Names, aliases and addresses are read stripped; an address is bare or
# `Name <address>`; an alias must not read as a UUID.
_BARE_ADDRESS = ADDRESS_PATTERN.pattern.replace(r"\s", SPACE)
_ADDRESS = rf"(?:{_BARE_ADDRESS}|[^<>]*<[{SPACE}]*{_BARE_ADDRESS}[{SPACE}]*>)"
Name = Annotated[str, declared(pattern=trimmed(MAX_TEMPLATE_NAME_LENGTH))]
Html = Annotated[str, declared(pattern=f"[^{SPACE}]")]
Alias = Annotated[
    str,
    declared(
        pattern=rf"^[{SPACE}]*[A-Za-z0-9_-]{{1,{MAX_ALIAS_LENGTH}}}[{SPACE}]*{END}",
        **{"not": {"pattern": rf"^[{SPACE}]*{UUID_TEXT}[{SPACE}]*{END}"}},
    ),
]
# At most MAX_FROM_LENGTH characters once stripped: the lookahead.
FromAddress = Annotated[
    str,
    declared(pattern=rf"^(?={trimmed(MAX_FROM_LENGTH)[1:]})[{SPACE}]*{_ADDRESS}[{SPACE}]*{END}"),
]
ReplyTo = Annotated[str, declared(pattern=rf"^[{SPACE}]*{_ADDRESS}[{SPACE}]*{END}")]
Subject = Annotated[str, declared(maxLength=MAX_SUBJECT_LENGTH)]
VariableKey = Annotated[
    str,
    declared(
        pattern=rf"^[A-Za-z0-9_]{{1,{MAX_KEY_LENGTH}}}{END}",
        **{"not": {"enum": sorted(RESERVED_KEYS)}},
    ),
]


class VariableBody(BaseModel):
    key: VariableKey
    type: Annotated[str, declared(enum=list(VARIABLE_TYPES))]
    fallback_value: Any = None

    def to_variable(self) -> Variable:
        return Variable(self.key, self.type, self.fallback_value)


class TemplateFields(BaseModel):
    """The fields of a template body; which are required depends on the route (a PATCH
    may leave any out, but null only the optional ones)."""

    name: Absent[Name] = None
    html: Absent[Html] = None
    alias: Alias | None = None
    from_address: FromAddress | None = Field(default=None, alias="from")
    subject: Subject | None = None
    reply_to: ReplyTo | Annotated[list[ReplyTo], declared(maxItems=MAX_REPLY_TO)] | None = None
    text: str | None = None
    variables: Annotated[list[VariableBody], declared(maxItems=MAX_VARIABLES)] | None = None


class CreateTemplate(TemplateFields):
    name: Name
    html: Html


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


@router.post("/templates", status_code=201, openapi_extra=json_body(CreateTemplate))
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


@router.patch("/templates/{id_or_alias}", openapi_extra=json_body(TemplateFields))
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
