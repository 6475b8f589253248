"""Audiences: create, list, get and delete (their contacts live in ``contacts``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import audiences
from mailbridge.services.audiences import audience_view
from mailbridge.wire import NonBlank

router = APIRouter(tags=["audiences"])


class CreateAudience(BaseModel):
    name: NonBlank = Field(min_length=1, max_length=audiences.MAX_AUDIENCE_NAME_LENGTH)


@router.post("/audiences", status_code=201)
async def create_audience(
    body: CreateAudience, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    audience = await audiences.create_audience(session, context.clock, principal.team_id, body.name)
    return {"object": "audience", "id": audience.id, "name": audience.name}


@router.get("/audiences")
async def list_audiences(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await audiences.list_audiences(session, principal.team_id, page)
    return list_body(result, audience_view)


@router.get("/audiences/{audience_id}")
async def get_audience(audience_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    return audience_view(await audiences.get_audience(session, principal.team_id, audience_id))


@router.delete("/audiences/{audience_id}")
async def delete_audience(
    audience_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    audience = await audiences.delete_audience(session, context, principal.team_id, audience_id)
    return {"object": "audience", "id": audience.id, "deleted": True}
