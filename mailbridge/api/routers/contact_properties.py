"""Contact properties: the custom keys contacts may carry."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import audiences
from mailbridge.services.audiences import contact_property_view
from mailbridge.wire import declared

router = APIRouter(tags=["contact-properties"])


class CreateContactProperty(BaseModel):
    key: str = declared(**audiences.PROPERTY_KEY_SCHEMA)
    type: str = declared(enum=list(audiences.PROPERTY_TYPES))
    # Of the property's `type` (a rule over two fields, checked by the service).
    fallback_value: Any = None


@router.post("/contact-properties", status_code=201)
async def create_property(
    body: CreateContactProperty, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    prop = await audiences.create_property(
        session, context.clock, principal.team_id, body.key, body.type, body.fallback_value
    )
    return {"object": "contact_property", "id": prop.id}


@router.get("/contact-properties")
async def list_properties(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await audiences.list_properties(session, principal.team_id, page)
    return list_body(result, contact_property_view)


@router.get("/contact-properties/{property_id}")
async def get_property(property_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    prop = await audiences.get_property(session, principal.team_id, property_id)
    return contact_property_view(prop)


@router.patch("/contact-properties/{property_id}")
async def update_property(
    property_id: str,
    body: Annotated[dict[str, Any], Body()],
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    prop = await audiences.update_property(
        session, context.clock, principal.team_id, property_id, body
    )
    return {"object": "contact_property", "id": prop.id}


@router.delete("/contact-properties/{property_id}")
async def delete_property(
    property_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    prop = await audiences.delete_property(session, context, principal.team_id, property_id)
    return {"object": "contact_property", "id": prop.id, "deleted": True}
