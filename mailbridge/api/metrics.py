"""``GET /metrics`` (Prometheus' text format) and the HTTP families it reports.

:class:`HttpMetrics` is the outermost ASGI middleware: it times every request and
counts it by route *template* (``/emails/{email_id}``, never the raw path, whose ids
would make a series per email), method and status. A request answered before FastAPI
routed it — the send path's shortcut, a 401 from authentication, a 429 from the rate
limit — is matched against the routes afterwards; a path no route knows is
``unmatched``.

Who may read it: with ``MAILBRIDGE_METRICS_TOKEN`` set, a caller presenting
``Authorization: Bearer <token>`` (else 401); without it, loopback callers only, and
``404`` to anybody else, so a public bind shows nothing (docs/decisions.md, "Metrics").
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailbridge.api.deps import ContextDep
from mailbridge.errors import MissingApiKey, NotFound
from mailbridge.services.operations import database_metrics, observe_request, process_metrics

UNMATCHED = "unmatched"
APP_ROOT_PATH = "mailbridge.app_root_path"  # the root path before any mount
LOOPBACK = frozenset({"127.0.0.1", "::1"})
METRICS_TOKEN_NEEDED = (
    "GET /metrics needs the header: Authorization: Bearer <MAILBRIDGE_METRICS_TOKEN>"
)

router = APIRouter(include_in_schema=False)


def route_template(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The template of the route ``scope`` reached or would reach; ``unmatched`` if none.

    After routing, the route is in ``scope["route"]`` (the innermost one under a mount
    of a sub-application, whose prefix the mount added to ``root_path``). Before it,
    the path is matched against the routes, as the router would.
    """
    route = scope.get("route")
    if isinstance(route, Mount):
        return _template_of(route)
    if route is not None and getattr(route, "path_format", None):
        mounted = str(scope.get("root_path", ""))[len(scope.get(APP_ROOT_PATH, "")) :]
        return mounted + str(route.path_format)
    return _matching(patterns(routes), scope)


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    methods: frozenset[str] | None  # None: any (a mount)
    template: str


def patterns(routes: Iterable[BaseRoute], prefix: str = "") -> list[_Pattern]:
    """Every route as a pattern, in the router's order, included routers opened
    (FastAPI keeps an included router as one route holding ``original_router``)."""
    found: list[_Pattern] = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        regex = getattr(route, "path_regex", None)
        if inner is not None:
            context = getattr(route, "include_context", None)
            found += patterns(inner.routes, prefix + str(getattr(context, "prefix", "")))
        elif regex is not None:
            methods = getattr(route, "methods", None)
            found.append(
                _Pattern(
                    re.compile(re.escape(prefix) + regex.pattern.removeprefix("^")),
                    frozenset(methods) if methods else None,
                    prefix + _template_of(route),
                )
            )
    return found


def _matching(found: list[_Pattern], scope: Scope) -> str:
    path, method = scope["path"], scope["method"]
    partial = None
    for pattern in found:
        if not pattern.regex.match(path):
            continue
        if pattern.methods is None or method in pattern.methods:
            return pattern.template
        partial = partial or pattern.template  # the path is known, not the method: 405
    return partial or UNMATCHED


def _template_of(route: BaseRoute) -> str:
    return str(getattr(route, "path_format", "") or UNMATCHED)  # a mount's ends in /{path}


class HttpMetrics:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes
        self._patterns: list[_Pattern] | None = None  # made at the first use
        # Templates of paths the routes match without parameters, by (method, path):
        # the send path is answered before routing, and matched here on every call.
        self._static: dict[tuple[str, str], str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        scope.setdefault(APP_ROOT_PATH, scope.get("root_path", ""))
        status = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            observe_request(
                self._template(scope), scope["method"], status, time.perf_counter() - started
            )

    def _template(self, scope: Scope) -> str:
        if "route" in scope:
            return route_template(self.routes, scope)
        key = (scope["method"], scope["path"])
        found = self._static.get(key)
        if found is None:
            if self._patterns is None:
                self._patterns = patterns(self.routes)
            found = _matching(self._patterns, scope)
            if found == scope["path"] and len(self._static) < 1000:
                self._static[key] = found
        return found


def _authorized(request: Request, token: str | None) -> None:
    if token is None:
        client = request.client.host if request.client else ""
        if client not in LOOPBACK:
            raise NotFound()
        return
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    presented = value.strip().encode()
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented, token.encode()):
        raise MissingApiKey(METRICS_TOKEN_NEEDED)


@router.get("/metrics")
async def metrics_text(request: Request, context: ContextDep) -> Response:
    _authorized(request, context.settings.metrics_token)
    body = process_metrics() + await database_metrics(context)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
