"""The outer layer of every request: authentication, the request log, the last-resort 500.

A plain ASGI middleware (no BaseHTTPMiddleware): it authenticates before the body is
parsed, so a caller without a key learns that first; it records every authenticated
request for GET /logs; and an exception nobody handled becomes the 500 envelope with
nothing internal in it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars

from mailbridge.api.outages import unavailable_error
from mailbridge.errors import ApiError, ApplicationError, MissingUserAgent
from mailbridge.services.accounts import (
    CapturedBody,
    LogEntry,
    Principal,
    RequestLogSink,
    authenticate,
    bearer_token,
    principal_cache,
)
from mailbridge.services.kernel import ServiceContext

logger = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/health", "/ready", "/openapi.json", "/metrics"})  # metrics: own check
# Signed links in sent mail (tracking, unsubscribe, downloads, poll votes) and share
# links: their token is the key.
# The dashboard signs its members in with a cookie of its own (mailbridge.dashboard).
PUBLIC_PREFIXES = ("/t/", "/polls/vote/", "/share/", "/dashboard")
CAPTURE_LIMIT = 64 * 1024


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def send_error(send: Send, error: ApiError) -> None:
    body = json.dumps(error.to_envelope(), separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in error.headers.items()]
    await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def is_public(path: str) -> bool:
    """Reached without a key and without a User-Agent."""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


@dataclass
class _Capture:
    """One direction of the exchange, kept up to CAPTURE_LIMIT bytes for the log."""

    chunks: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, chunk: bytes) -> None:
        if self.size + len(chunk) <= CAPTURE_LIMIT:
            self.chunks.append(chunk)
        self.size += len(chunk)

    def logged(self) -> CapturedBody:
        return CapturedBody(b"".join(self.chunks), truncated=self.size > CAPTURE_LIMIT)


@dataclass
class _Exchange:
    request: _Capture = field(default_factory=_Capture)
    response: _Capture = field(default_factory=_Capture)
    status: int = 500
    started: bool = False


class ApiMiddleware:
    def __init__(self, app: ASGIApp, context: ServiceContext, log_sink: RequestLogSink) -> None:
        self.app = app
        self.context = context
        self.log_sink = log_sink

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            principal = await self._authenticate(scope)
        except ApiError as error:
            await send_error(send, error)
            return
        except Exception as exc:
            unavailable = unavailable_error(exc, "authentication")
            if unavailable is None:
                raise
            await send_error(send, unavailable)
            return
        scope.setdefault("state", {})["principal"] = principal
        bind_contextvars(team_id=principal.team_id)  # unbound by RequestIds
        exchange = _Exchange()

        async def receive_and_capture() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange.request.add(message.get("body", b""))
            return message

        async def send_and_capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status, exchange.started = message["status"], True
            elif message["type"] == "http.response.body":
                exchange.response.add(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive_and_capture, send_and_capture)
        except Exception as exc:
            where = f"{scope['method']} {scope['path']}"
            unavailable = unavailable_error(exc, where)
            if unavailable is None:
                logger.exception("unhandled error on %s", where)
            if exchange.started:
                raise
            await send_error(send_and_capture, unavailable or ApplicationError())
        finally:
            self._record(scope, principal, started, exchange)

    async def _authenticate(self, scope: Scope) -> Principal:
        if not header(scope, b"user-agent"):
            raise MissingUserAgent()
        token = bearer_token(header(scope, b"authorization"))
        cache = principal_cache(self.context)
        cached = cache.get(token)
        if cached is not None and cached.expired(self.context.clock.now()):
            cache.discard(token)  # authenticate again: it answers for the expired key
        return await cache.get_or_load(token, lambda: self._lookup(token))

    async def _lookup(self, token: str) -> Principal:
        async with self.context.database.session() as session:
            return await authenticate(session, self.context.clock, token)

    def _record(
        self, scope: Scope, principal: Principal, started: float, exchange: _Exchange
    ) -> None:
        self.log_sink.record(
            LogEntry(
                team_id=principal.team_id,
                api_key_id=principal.api_key_id,
                member_id=principal.member_id,
                method=scope["method"],
                path=scope["path"],
                query=bytes(scope.get("query_string", b"")).decode("latin-1") or None,
                status=exchange.status,
                user_agent=header(scope, b"user-agent"),
                duration_ms=round((time.perf_counter() - started) * 1000),
                request_body=exchange.request.logged(),
                response_body=exchange.response.logged(),
                created_at=self.context.clock.now(),
            )
        )
