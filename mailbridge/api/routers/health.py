from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from mailbridge.api.deps import ContextDep
from mailbridge.errors import ServiceUnavailable
from mailbridge.services.operations import health_report, readiness

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(
    context: ContextDep,
    relay: Annotated[bool, Query(description="also check that the SMTP relay answers")] = False,
) -> dict[str, Any]:
    return await health_report(context, relay=relay)


@router.get("/ready")
async def ready(context: ContextDep) -> dict[str, str]:
    """200 when the database answers and its schema is at the code's head; else 503."""
    is_ready, why = await readiness(context)
    if not is_ready:
        raise ServiceUnavailable(f"Not ready: {why}.")
    return {"status": "ready"}
