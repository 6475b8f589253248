"""API keys: created and revoked from the dashboard or the operator CLI, listed by API."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.accounts import _tokens as tokens
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.tables import ApiKey

API_KEY_KIND = "mb"
MAX_API_KEY_NAME_LENGTH = 50


class Permission(StrEnum):
    FULL_ACCESS = "full_access"
    SENDING_ACCESS = "sending_access"


async def create_api_key(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    name: str,
    permission: Permission = Permission.FULL_ACCESS,
    domain: str | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; the token in the answer is the only copy there will ever be."""
    name = name.strip()
    if not name or len(name) > MAX_API_KEY_NAME_LENGTH:
        raise ValidationError(f"`name` must be 1 to {MAX_API_KEY_NAME_LENGTH} characters.")
    if domain is not None and permission is not Permission.SENDING_ACCESS:
        raise ValidationError("`domain` can only limit a key with `sending_access`.")
    issued = tokens.issue(API_KEY_KIND)
    key = ApiKey(
        team_id=team_id,
        name=name,
        permission=permission.value,
        domain=domain.lower() if domain else None,
        token_prefix=issued.prefix,
        token_hash=issued.digest,
        created_at=clock.now(),
        expires_at=expires_at,
    )
    session.add(key)
    await session.commit()
    return key, issued.token


async def list_api_keys(session: AsyncSession, team_id: str, page: PageRequest) -> Page[ApiKey]:
    query = select(ApiKey).where(ApiKey.team_id == team_id, ApiKey.revoked_at.is_(None))
    return await paginate(session, query, ApiKey, page)


async def get_api_key(session: AsyncSession, team_id: str | None, key_id: str) -> ApiKey:
    query = select(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
    if team_id is not None:
        query = query.where(ApiKey.team_id == team_id)
    key = await session.scalar(query)
    if key is None:
        raise NotFound("API key not found.")
    return key


async def revoke_api_key(
    session: AsyncSession, clock: Clock, team_id: str | None, key_id: str
) -> ApiKey:
    """Revoke a key at once; ``team_id`` None is the operator's reach over every team."""
    key = await get_api_key(session, team_id, key_id)
    key.revoked_at = clock.now()
    await session.commit()
    return key


async def update_api_key(
    session: AsyncSession, team_id: str, key_id: str, changes: dict[str, Any]
) -> ApiKey:
    """Rename or re-scope a key (its token stays the same). ``changes`` holds the fields
    given: ``name``, ``permission``, ``domain`` (null: any domain). A key made
    ``full_access`` loses its domain; a ``domain`` needs ``sending_access``."""
    key = await get_api_key(session, team_id, key_id)
    name = key.name
    if "name" in changes:
        name = str(changes["name"] or "").strip()
        if not name or len(name) > MAX_API_KEY_NAME_LENGTH:
            raise ValidationError(f"`name` must be 1 to {MAX_API_KEY_NAME_LENGTH} characters.")
    permission = Permission(changes.get("permission") or key.permission)
    domain = key.domain
    if "domain" in changes:
        domain = changes["domain"].lower() if changes["domain"] else None
    elif "permission" in changes and permission is Permission.FULL_ACCESS:
        domain = None
    if domain is not None and permission is not Permission.SENDING_ACCESS:
        raise ValidationError("`domain` can only limit a key with `sending_access`.")
    key.name, key.permission, key.domain = name, permission.value, domain
    await session.commit()
    return key


def api_key_view(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "permission": key.permission,
        "domain": key.domain,
        "created_at": isoformat_ms(key.created_at),
        "last_used_at": isoformat_ms(key.last_used_at),
        "expires_at": isoformat_ms(key.expires_at),
    }
