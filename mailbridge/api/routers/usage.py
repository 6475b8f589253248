"""GET /usage: the team's use of its plan (Resend's shape; rolling windows, see the service)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailbridge.api.deps import ContextDep, Reader, SessionDep
from mailbridge.services import operations

router = APIRouter(tags=["usage"])


@router.get("/usage")
async def get_usage(principal: Reader, session: SessionDep, context: ContextDep) -> dict[str, Any]:
    return await operations.team_usage(
        session, context.settings, context.clock.now(), principal.team_id
    )
