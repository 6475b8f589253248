"""API keys: listing is open to keys; everything else is the dashboard's (members only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, DashboardUser, PageDep, Reader, SessionDep
from mailbridge.errors import NotFound
from mailbridge.services import accounts
from mailbridge.services.accounts import Permission, api_key_view

router = APIRouter(tags=["api-keys"])


class CreateApiKey(BaseModel):
    name: str = Field(min_length=1, max_length=accounts.MAX_API_KEY_NAME_LENGTH)
    permission: Permission = Permission.FULL_ACCESS
    domain: str | None = None


@router.get("/api-keys")
async def list_keys(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await accounts.list_api_keys(session, principal.team_id, page)
    return list_body(result, api_key_view)


@router.post("/api-keys", status_code=201)
async def create_key(
    principal: DashboardUser, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, CreateApiKey)
    key, token = await accounts.create_api_key(
        session, context.clock, principal.team_id, body.name, body.permission, body.domain
    )
    return {"id": key.id, "token": token}


@router.delete("/api-keys/{key_id}")
async def revoke_key(
    principal: DashboardUser, key_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    key = await accounts.revoke_api_key(session, context.clock, principal.team_id, key_id)
    context.principals.clear()
    return {"object": "api_key", "id": key.id, "deleted": True}


# Refusals, not operations: kept out of the OpenAPI document (one function under several
# methods would give it duplicate operation ids).
@router.api_route("/api-keys", methods=["PATCH", "PUT", "DELETE"], include_in_schema=False)
@router.api_route(
    "/api-keys/{rest:path}", methods=["POST", "PATCH", "PUT", "DELETE"], include_in_schema=False
)
async def other_key_changes(principal: DashboardUser) -> JSONResponse:
    """Anything else that would change keys: refused to API keys, unknown to members."""
    raise NotFound()
