"""Routers included into an app once per process, whatever the number of apps.

FastAPI (0.165) works out an included route's handler — the validators of its
parameters, bodies and answers — at the first request an app gets, a long wait for
the whole API and dashboard here. A process that builds many apps (each test of the
integration tier builds one over its own database, a bench builds one per variant) would
pay that again for each. The inclusion itself holds nothing of the app (the services
are found through ``request.app.state``, and no dependency is overridden), so one
inclusion per router and options serves every app of the process.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute

from mailbridge.api.envelope import ERROR_RESPONSES

# By the router's id (routers are not hashable): the inclusion holds the router, so an
# id in here is never reused by another router.
_INCLUDED: dict[tuple[int, str, bool, bool], BaseRoute] = {}


def _included(
    router: APIRouter, prefix: str, include_in_schema: bool, with_errors: bool
) -> BaseRoute:
    key = (id(router), prefix, include_in_schema, with_errors)
    if key in _INCLUDED:
        return _INCLUDED[key]
    holder = APIRouter()
    holder.include_router(
        router,
        prefix=prefix,
        include_in_schema=include_in_schema,
        responses=ERROR_RESPONSES if with_errors else None,
    )
    [included] = holder.routes
    _INCLUDED[key] = included
    return included


def include(
    app: FastAPI,
    router: APIRouter,
    *,
    prefix: str = "",
    include_in_schema: bool = True,
    with_errors: bool = False,
) -> None:
    """``app.include_router(router, ...)``, the inclusion shared with the process's other
    apps; ``with_errors`` declares the error envelope under every status a route may
    answer (``ERROR_RESPONSES``)."""
    app.router.routes.append(_included(router, prefix, include_in_schema, with_errors))
