"""API keys: listing is open to keys; creating, renaming, re-scoping and revoking are the
dashboard's (members only: spec §5 rule 4)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, DashboardUser, PageDep, Reader, SessionDep
from mailbridge.api.openapi import json_body
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


@router.post("/api-keys", status_code=201, openapi_extra=json_body(CreateApiKey))
async def create_key(
    principal: DashboardUser, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, CreateApiKey)
    key, token = await accounts.create_api_key(
        session, context.clock, principal.team_id, body.name, body.permission, body.domain
    )
    return {"id": key.id, "token": token}


class UpdateApiKey(BaseModel):
    name: str | None = Field(
        default=None, min_length=1, max_length=accounts.MAX_API_KEY_NAME_LENGTH
    )
    permission: Permission | None = None
    domain: str | None = Field(default=None, max_length=253)


@router.patch("/api-keys/{key_id}", openapi_extra=json_body(UpdateApiKey))
async def update_key(
    principal: DashboardUser, key_id: str, request: Request, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    """Rename or re-scope a key (members only, like every key change); its token stays."""
    body = await parse_body(request, UpdateApiKey)
    key = await accounts.update_api_key(
        session, principal.team_id, key_id, body.model_dump(exclude_unset=True)
    )
    accounts.principal_cache(context).clear()  # the new scope holds from the next request on
    return api_key_view(key)


@router.delete("/api-keys/{key_id}")
async def revoke_key(
    principal: DashboardUser, key_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    key = await accounts.revoke_api_key(session, context.clock, principal.team_id, key_id)
    accounts.principal_cache(context).clear()
    return {"object": "api_key", "id": key.id, "deleted": True}


# Refusals, not operations: kept out of the OpenAPI document (one function under several
# methods would give it duplicate operation ids).
@router.api_route(
    "/api-keys/{key_id}/{rest:path}", methods=["POST", "PATCH", "PUT", "DELETE"],
    include_in_schema=False,
)  # fmt: skip
async def other_key_changes(principal: DashboardUser) -> JSONResponse:
    """Anything else that would change a key (``/api-keys/:id/rotate`` ...): refused to API
    keys, unknown to members. A method the document does not name on a path it does
    (``PUT /api-keys/:id``, ``DELETE /api-keys``) is a 405 with ``Allow``."""
    raise NotFound()
