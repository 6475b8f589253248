from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, LogSinkDep, PageDep, Reader
from mailbridge.services import accounts

router = APIRouter(tags=["logs"])


@router.get("/logs")
async def list_logs(
    principal: Reader, context: ContextDep, sink: LogSinkDep, page: PageDep
) -> dict[str, Any]:
    await sink.flush()
    result = await accounts.list_logs(context.database, principal.team_id, page)
    return list_body(result, lambda row: accounts.log_view(row, with_bodies=False))


@router.get("/logs/{log_id}")
async def get_log(
    log_id: str, principal: Reader, context: ContextDep, sink: LogSinkDep
) -> dict[str, Any]:
    await sink.flush()
    row = await accounts.get_log(context.database, principal.team_id, log_id)
    return accounts.log_view(row, with_bodies=True)
