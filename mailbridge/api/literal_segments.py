"""A literal path is never taken for an id: ``PATCH /emails/batch`` is a 405, not an email.

Starlette matches ``PATCH /emails/batch`` to ``PATCH /emails/{email_id}`` (a full match)
before it sees that ``/emails/batch`` exists for POST only, so the caller would hear
about a bad body or a missing email instead of ``405`` with ``Allow: POST``. This
middleware knows every path of the API written without parameters (``/emails/batch``,
``/domains/claim``, ``/events/send``, ...) and answers a method none of its routes takes
with the 405 itself: one dictionary lookup per request. A path with parameters whose
last segment is literal where a parameter could stand too (``/inboxes/{inbox_ref}/
threads/search`` beside ``.../threads/{thread_id}``) is known by that last segment,
then matched as a pattern.
"""

from __future__ import annotations

import re
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


Tails = dict[str, list[tuple[re.Pattern[str], frozenset[str]]]]


def literal_tails(routes: Iterable[APIRoute]) -> Tails:
    """Paths with parameters ending in a literal segment a parameter route also matches,
    by that segment: their pattern and methods."""
    routes = list(routes)
    formats = {route.path_format for route in routes}
    found: dict[str, set[str]] = {}
    for route in routes:
        path = route.path_format
        head, _, tail = path.rpartition("/")
        if (
            "{" in path
            and "{" not in tail
            and any(
                other.rpartition("/")[0] == head and other.rpartition("/")[2].startswith("{")
                for other in formats
            )
        ):
            found.setdefault(path, set()).update(route.methods or ())
    tails: Tails = {}
    for path, methods in found.items():
        segments = (
            "[^/]+" if part.startswith("{") else re.escape(part) for part in path.split("/")
        )
        pattern = re.compile("^" + "/".join(segments) + "$")
        tails.setdefault(path.rpartition("/")[2], []).append((pattern, frozenset(methods)))
    return tails


class LiteralPaths:
    def __init__(
        self, app: ASGIApp, paths: dict[str, frozenset[str]], tails: Tails | None = None
    ) -> None:
        self.app = app
        self.paths = paths
        self.tails = tails or {}

    def _methods(self, path: str) -> frozenset[str] | None:
        methods = self.paths.get(path)
        if methods is None and self.tails:
            for pattern, allowed in self.tails.get(path.rpartition("/")[2], ()):
                if pattern.match(path):
                    return allowed
        return methods

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            methods = self._methods(scope["path"])
            method = "GET" if scope["method"] == "HEAD" else scope["method"]
            if methods is not None and method not in methods:
                allow = ", ".join(sorted(methods))
                response = error_response(MethodNotAllowed(headers={"Allow": allow}))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
