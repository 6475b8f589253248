"""The dashboard: server-rendered pages (Jinja2, htmx for partial updates, SVG drawn on
the server) under ``/dashboard``, for members signed in with their email and password.

Pages read and write through the HTTP API in process, with the member's session token
as the bearer, so the API's rules hold for every click: key management only for
members (spec §5 rule 4), no write from a view-only member (rule 5), whatever a page
shows or hides. Forms carry CSRF tokens; the routes stay out of the OpenAPI document.
Every response under ``PREFIX`` carries ``HEADERS``: a strict Content-Security-Policy, so
the pages run only the dashboard's own script files.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailbridge.dashboard import (
    _access_pages,
    _account_pages,
    _content_pages,
    _inbox_pages,
    _mail_pages,
    _poll_pages,
    _signing_in,
)
from mailbridge.dashboard._common import Redirect
from mailbridge.dashboard._render import HERE, content_security_policy, message
from mailbridge.dashboard._sign_in_limits import SignInLimiter
from mailbridge.errors import ApiError, ApplicationError, ServiceUnavailable
from mailbridge.storage.outages import is_unavailable

logger = logging.getLogger(__name__)

PREFIX = "/dashboard"
PAGES = (
    _signing_in, _mail_pages, _inbox_pages, _content_pages, _poll_pages, _account_pages,
    _access_pages,
)  # fmt: skip
# With every response under PREFIX, unless it set its own (mailbridge.api.security_headers).
HEADERS = {
    "content-security-policy": content_security_policy(),
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


def routes() -> list[tuple[str, str]]:
    """(method, path) of every dashboard route (for the tests that walk them all)."""
    return [
        (method, PREFIX + getattr(route, "path", ""))
        for pages in PAGES
        for route in pages.router.routes
        for method in sorted(getattr(route, "methods", ()) or ())
    ]


def install(app: FastAPI) -> None:
    """Serve the dashboard's static files, sign-in limits and error pages from ``app``
    (``mailbridge serve`` and ``mailbridge api``); the app includes ``PAGES``' routers
    under ``PREFIX``."""
    app.mount(f"{PREFIX}/static", StaticFiles(directory=HERE / "static"), name="dashboard-static")
    app.state.sign_in_limiter = SignInLimiter()

    async def redirect(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Redirect)
        return exc.response

    app.add_exception_handler(Redirect, redirect)
    app.add_middleware(DashboardGuard)


class DashboardGuard:
    """What nothing else caught under ``/dashboard`` (the API's middleware leaves these
    paths alone): a page, never a traceback — a 503 with ``retry-after`` when the
    database is out of reach (logged as one line), a 500 page otherwise (logged with
    its traceback)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            request = Request(scope)
            if is_unavailable(exc):
                logger.warning("database unavailable on %s: %s", request.url.path, exc)
                error: ApiError = ServiceUnavailable()
            else:
                logger.exception("unhandled error on %s %s", request.method, request.url.path)
                error = ApplicationError()
            title = "Try again shortly" if error.status_code == 503 else "Something went wrong"
            response = message(request, None, title, error.message,
                               status_code=error.status_code, name=error.name)  # fmt: skip
            response.headers.update(error.headers)
            await response(scope, receive, send)
