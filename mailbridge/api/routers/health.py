from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy import text

from mailbridge import __version__
from mailbridge.api.deps import ContextDep

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(context: ContextDep) -> dict[str, Any]:
    async with context.database.session() as session:
        await session.execute(text("SELECT 1"))
    return {
        "status": "ok",
        "version": __version__,
        "database": context.database.engine.dialect.name,
    }
