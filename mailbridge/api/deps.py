"""Dependency aliases for the routers: the context, the caller, the page asked for."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.services.accounts import Action, Principal, RequestLogSink
from mailbridge.services.context import ServiceContext
from mailbridge.storage.pagination import PageRequest

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


async def get_page(
    limit: Annotated[str | None, Query()] = None,
    after: Annotated[str | None, Query()] = None,
    before: Annotated[str | None, Query()] = None,
) -> PageRequest:
    return PageRequest.parse(limit, after, before)


ContextDep = Annotated[ServiceContext, Depends(get_context)]
SessionDep = Annotated[AsyncSession, Depends(get_session)]
LogSinkDep = Annotated[RequestLogSink, Depends(get_log_sink)]
PageDep = Annotated[PageRequest, Depends(get_page)]
Reader = Annotated[Principal, Depends(authorized(Action.READ))]
Writer = Annotated[Principal, Depends(authorized(Action.WRITE))]
Sender = Annotated[Principal, Depends(authorized(Action.SEND))]
DashboardUser = Annotated[Principal, Depends(authorized(Action.DASHBOARD))]
