"""Every HTTP request gets an id: bound to the log context and answered in ``x-request-id``.

Around the authenticating middleware: a caller's ``X-Request-Id`` is kept when it is
sane (1 to 64 letters, digits, ``-``, ``_``, ``.``, ``:``), else a new one is made, so
a proxy's id follows the request through the logs. Every line logged while the request
is handled — uvicorn's access line included, which uvicorn writes from the request's
own task — carries ``request_id`` (and ``team_id`` once ``ApiMiddleware`` has
authenticated the caller).
"""

from __future__ import annotations

import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars, unbind_contextvars

HEADER = b"x-request-id"
SANE = re.compile(rb"[A-Za-z0-9._:\-]{1,64}")


def request_id(scope: Scope) -> str:
    """The caller's id when it is sane, else a new one."""
    for key, value in scope.get("headers", ()):
        if key == HEADER:
            if SANE.fullmatch(value):
                return bytes(value).decode("ascii")
            break
    return uuid.uuid4().hex


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        value = rid.encode("ascii")

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (HEADER, value)]
            await send(message)

        tokens = bind_contextvars(request_id=rid)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            reset_contextvars(**tokens)
            # Bound further in by ApiMiddleware; gone with the request (tests and the
            # dashboard's in-process calls handle requests in one task).
            unbind_contextvars("team_id")
