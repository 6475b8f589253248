"""Dependency aliases for the routers: the context, the caller, the page asked for."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Query, Request
from pydantic import WithJsonSchema
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.services.accounts import Action, Principal, RequestLogSink
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.pagination import MAX_LIMIT, PageRequest

# Every dependency here is ``async``: FastAPI runs plain ``def`` dependencies in a
# thread pool, a cost the send path cannot afford on every request.


async def get_context(request: Request) -> ServiceContext:
    context: ServiceContext = request.app.state.context
    return context


async def get_log_sink(request: Request) -> RequestLogSink:
    sink: RequestLogSink = request.app.state.log_sink
    return sink


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with (await get_context(request)).database.session() as session:
        yield session


def authorized(action: Action) -> Callable[[Request], Awaitable[Principal]]:
    async def dependency(request: Request) -> Principal:
        principal: Principal = request.state.principal
        principal.authorize(action)
        return principal

    return dependency


# A cursor is the id of an object of the list: a UUID, or a number (webhooks). Declared
# only; a malformed one is refused by the pagination in the spec's words.
CURSOR_PATTERN = (
    "^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9]{1,18})$"
)
CursorQuery = Annotated[
    str | None, Query(min_length=1, max_length=100, json_schema_extra={"pattern": CURSOR_PATTERN})
]


# ``limit`` is declared what it is, an integer from 1 to 100, but read as text: pydantic's
# lax integers would take `5_0`, `+5` or ` 5`, which the spec's ASCII digits refuse.
LimitQuery = Annotated[
    str | None,
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}),
    Query(),
]


async def get_page(
    limit: LimitQuery = None,
    after: CursorQuery = None,
    before: CursorQuery = None,
) -> PageRequest:
    """A bad ``limit`` is told in the spec's words; ``after`` and ``before`` together are
    refused too (spec §8.3; OpenAPI cannot say it)."""
    return PageRequest.parse(limit, after, before)


ContextDep = Annotated[ServiceContext, Depends(get_context)]
SessionDep = Annotated[AsyncSession, Depends(get_session)]
LogSinkDep = Annotated[RequestLogSink, Depends(get_log_sink)]
PageDep = Annotated[PageRequest, Depends(get_page)]
Reader = Annotated[Principal, Depends(authorized(Action.READ))]
Writer = Annotated[Principal, Depends(authorized(Action.WRITE))]
Sender = Annotated[Principal, Depends(authorized(Action.SEND))]
DashboardUser = Annotated[Principal, Depends(authorized(Action.DASHBOARD))]
DashboardReader = Annotated[Principal, Depends(authorized(Action.DASHBOARD_READ))]
