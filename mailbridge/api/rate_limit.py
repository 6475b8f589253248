"""The per-IP rate limit of the send endpoints (spec §8.2), with the `limits` library.

Counters live in process memory, or in Redis when ``MAILBRIDGE_REDIS_URL`` is set so
that every API process shares them. Every response of a limited endpoint carries
``ratelimit-limit``, ``ratelimit-remaining`` and ``ratelimit-reset``; a refusal is
429 ``rate_limit_exceeded`` with ``retry-after``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import coredis
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailbridge.api.middleware import send_error
from mailbridge.config import Settings
from mailbridge.errors import RateLimitExceeded

LIMITED = frozenset({("POST", "/emails"), ("POST", "/emails/batch")})


class RateCounters:
    """Where the counters live; owns the Redis connections it opens (closed with the app)."""

    def __init__(self, settings: Settings) -> None:
        self.item: RateLimitItem = parse(settings.send_rate_limit)
        self._pool: coredis.ConnectionPool | None = None
        storage: Storage = MemoryStorage()
        if settings.redis_url:
            self._pool = coredis.ConnectionPool.from_url(settings.redis_url)
            options: dict[str, Any] = {"connection_pool": self._pool}
            storage = RedisStorage("async+" + settings.redis_url.split("+", 1)[-1], **options)
        self.limiter = FixedWindowRateLimiter(storage)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.disconnect()


class SendRateLimit:
    def __init__(self, app: ASGIApp, counters: RateCounters) -> None:
        self.app = app
        self.item = counters.item
        self.limiter = counters.limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"].rstrip("/")) not in LIMITED:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        identity = client[0] if client else "unknown"
        allowed = await self.limiter.hit(self.item, "send", identity)
        reset_at, remaining = await self.limiter.get_window_stats(self.item, "send", identity)
        reset = max(0, math.ceil(reset_at - time.time()))
        headers = {
            "ratelimit-limit": str(self.item.amount),
            "ratelimit-remaining": str(max(0, remaining)),
            "ratelimit-reset": str(reset),
        }
        if not allowed:
            await send_error(send, RateLimitExceeded(retry_after=max(1, reset), headers=headers))
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    *((k.encode(), v.encode()) for k, v in headers.items()),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)
