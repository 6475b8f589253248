"""The headers that tell a browser how to treat every response.

Every response says ``X-Content-Type-Options: nosniff``: a browser takes its
``content-type`` at its word (JSON, a stored attachment, a static file) and never
guesses a script or a page out of it. Under a prefix given in ``under`` (the dashboard:
its Content-Security-Policy, ``X-Frame-Options``, ``Referrer-Policy``) the prefix's
headers are added too, each one only where the response did not set it itself — a
dashboard page that shows mail sends a policy of its own (``mailbridge.dashboard``). The
pages a recipient opens from an email get ``PUBLIC_PAGE``: they run no script at all.

A plain ASGI middleware around all but the metrics: the answers of the inner
middlewares (a 401, a 413, a 429, the dashboard's error pages) carry the headers too.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

Header = tuple[bytes, bytes]
NOSNIFF: Header = (b"x-content-type-options", b"nosniff")
# The pages a recipient opens from an email (unsubscribe, poll votes) and the files and
# redirects of the same links: no script at all, their own inline styles, forms to here.
PUBLIC_PAGE = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def _encoded(headers: Mapping[str, str]) -> tuple[Header, ...]:
    return tuple((name.lower().encode("latin-1"), value.encode("latin-1"))
                 for name, value in headers.items())  # fmt: skip


class SecurityHeaders:
    def __init__(
        self, app: ASGIApp, *, under: Mapping[str, Mapping[str, str]] | None = None
    ) -> None:
        self.app = app
        self.prefixes = tuple(
            (prefix.rstrip("/"), (NOSNIFF, *_encoded(headers)))
            for prefix, headers in (under or {}).items()
        )

    def _headers_for(self, path: str) -> tuple[Header, ...]:
        for prefix, headers in self.prefixes:
            if path == prefix or path.startswith(prefix + "/"):
                return headers
        return (NOSNIFF,)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        added = self._headers_for(scope["path"])

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {bytes(name).lower() for name, _value in headers}
                headers += [header for header in added if header[0] not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
