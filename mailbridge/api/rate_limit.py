"""The per-IP rate limit of the send endpoints (spec §8.2), with the `limits` library.

Counters live in process memory, or in Redis when ``MAILBRIDGE_REDIS_URL`` is set so
that every API process shares them. Every response of a limited endpoint carries
``ratelimit-limit``, ``ratelimit-remaining`` and ``ratelimit-reset``; a refusal is
429 ``rate_limit_exceeded`` with ``retry-after``.

Redis out of reach (refused, reset, or silent past ``REDIS_TIMEOUT``): with
``MAILBRIDGE_RATE_LIMIT_FAIL_OPEN`` (the default) sends go on unlimited and without the
headers; without it they are refused with 503 ``service_unavailable``. Either way one
warning when the outage starts and one line when Redis answers again.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

import coredis
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter
from limits.errors import StorageError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailbridge.api.middleware import send_error
from mailbridge.config import Settings
from mailbridge.errors import RateLimitExceeded, ServiceUnavailable

logger = logging.getLogger(__name__)

LIMITED = frozenset({("POST", "/emails"), ("POST", "/emails/batch")})
REDIS_TIMEOUT = 1.0  # seconds a count may take before Redis is taken for down


class LocalWindows:
    """Fixed windows in process memory, kept as ``limits``' MemoryStorage keeps them (a
    window opens at a client's first hit and lasts the limit's period), minus its two
    awaited calls, lock and timer per request: the send path asks on every request."""

    MAX_CLIENTS = 10_000  # beyond this, closed windows are dropped

    def __init__(self, item: RateLimitItem) -> None:
        self.amount = item.amount
        self.period = item.get_expiry()
        self._windows: dict[str, list[float]] = {}  # client -> [closes_at, hits]

    def hit(self, client: str) -> tuple[bool, int, float]:
        """Count a hit: (allowed, remaining, when the window closes as a Unix time)."""
        now = time.time()
        window = self._windows.get(client)
        if window is None or window[0] <= now:
            if len(self._windows) >= self.MAX_CLIENTS:
                self._windows = {k: w for k, w in self._windows.items() if w[0] > now}
            window = self._windows[client] = [now + self.period, 0]
        window[1] += 1
        return window[1] <= self.amount, max(0, self.amount - int(window[1])), window[0]


class RateCounters:
    """Where the counters live; owns the Redis connections it opens (closed with the app)."""

    def __init__(self, settings: Settings) -> None:
        self.item: RateLimitItem = parse(settings.send_rate_limit)
        self._pool: coredis.ConnectionPool | None = None
        self.local: LocalWindows | None = None
        self.fail_open = settings.rate_limit_fail_open
        self.redis_down = False
        storage: Storage = MemoryStorage()
        if settings.redis_url:
            self._pool = coredis.ConnectionPool.from_url(settings.redis_url)
            # Every failure of the store as limits' StorageError, whatever the client raised.
            options: dict[str, Any] = {"connection_pool": self._pool, "wrap_exceptions": True}
            storage = RedisStorage("async+" + settings.redis_url.split("+", 1)[-1], **options)
        else:
            self.local = LocalWindows(self.item)
        self.limiter = FixedWindowRateLimiter(storage)

    async def hit(self, client: str) -> tuple[bool, int, float] | None:
        """Count a send by ``client``: (allowed, remaining, when the window closes); None
        when Redis is out of reach and the limit fails open (ServiceUnavailable when closed)."""
        if self.local is not None:
            return self.local.hit(client)
        try:
            async with asyncio.timeout(REDIS_TIMEOUT):
                allowed = await self.limiter.hit(self.item, "send", client)
                reset_at, remaining = await self.limiter.get_window_stats(self.item, "send", client)
        except (StorageError, TimeoutError) as exc:
            if not self.redis_down:
                self.redis_down = True
                logger.warning(
                    "the send rate limit's Redis is unreachable (%s): sends %s until it is back",
                    exc.__cause__ or exc or "timeout",
                    "go unlimited" if self.fail_open else "are refused with 503",
                )
            if self.fail_open:
                return None
            raise ServiceUnavailable() from exc
        if self.redis_down:
            self.redis_down = False
            logger.warning("the send rate limit's Redis answers again: sends are counted")
        return allowed, remaining, reset_at

    def close(self) -> None:
        if self._pool is not None:
            self._pool.disconnect()


class SendRateLimit:
    def __init__(self, app: ASGIApp, counters: RateCounters) -> None:
        self.app = app
        self.item = counters.item
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"].rstrip("/")) not in LIMITED:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        identity = client[0] if client else "unknown"
        try:
            counted = await self.counters.hit(identity)
        except ServiceUnavailable as error:
            await send_error(send, error)
            return
        if counted is None:  # Redis down, failing open: not counted, no headers to give
            await self.app(scope, receive, send)
            return
        allowed, remaining, reset_at = counted
        reset = max(0, math.ceil(reset_at - time.time()))
        if not allowed:
            headers = {
                "ratelimit-limit": str(self.item.amount),
                "ratelimit-remaining": str(max(0, remaining)),
                "ratelimit-reset": str(reset),
            }
            await send_error(send, RateLimitExceeded(retry_after=max(1, reset), headers=headers))
            return
        raw_headers = [
            (b"ratelimit-limit", str(self.item.amount).encode()),
            (b"ratelimit-remaining", str(max(0, remaining)).encode()),
            (b"ratelimit-reset", str(reset).encode()),
        ]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *raw_headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)
