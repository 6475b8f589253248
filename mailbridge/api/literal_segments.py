"""A literal path is never taken for an id: ``PATCH /emails/batch`` is a 405, not an email.

Starlette matches ``PATCH /emails/batch`` to ``PATCH /emails/{email_id}`` (a full match)
before it sees that ``/emails/batch`` exists for POST only, so the caller would hear
about a bad body or a missing email instead of ``405`` with ``Allow: POST``. This
middleware knows every path of the API written without parameters (``/emails/batch``,
``/domains/claim``, ``/events/send``, ...) and answers a method none of its routes takes
with the 405 itself: one dictionary lookup per request.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from mailbridge.api.envelope import error_response
from mailbridge.errors import MethodNotAllowed


def literal_paths(routes: Iterable[APIRoute]) -> dict[str, frozenset[str]]:
    """Each path without parameters, with the methods its routes take."""
    found: dict[str, set[str]] = {}
    for route in routes:
        if "{" not in route.path_format:
            found.setdefault(route.path_format, set()).update(route.methods or ())
    return {path: frozenset(methods) for path, methods in found.items()}


class LiteralPaths:
    def __init__(self, app: ASGIApp, paths: dict[str, frozenset[str]]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            methods = self.paths.get(scope["path"])
            method = "GET" if scope["method"] == "HEAD" else scope["method"]
            if methods is not None and method not in methods:
                allow = ", ".join(sorted(methods))
                response = error_response(MethodNotAllowed(headers={"Allow": allow}))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
