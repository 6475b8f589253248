"""One webhook attempt: sign the stored body, POST it, say what came of it.

The request carries ``Content-Type: application/json`` and the signature headers of
``_signatures`` (spec §6.2's and Standard Webhooks', stamped with the attempt's time).
The endpoint is checked and pinned by ``mail.targets`` (no private targets unless
allowed) at every attempt. A 2xx is success; any other status, a redirect included, a
refused target, a connection error or no answer within
``timeout`` seconds is a failure, told in the outcome's ``error``.

The request goes to a ``mail.http_post.Poster``: the runner's is
``mail.http_post.AiohttpPoster``; an ``httpx.AsyncBaseTransport`` given instead (tests
pass ``httpx.MockTransport``) is used through ``mail.http_post.TransportPoster``.

A checked endpoint is remembered for ``TARGET_TTL`` seconds (the address it resolved
to included, like a resolver's cache): parsing, resolving and checking an endpoint for
every one of thousands of POSTs a second would cost more than the POST.
"""

from __future__ import annotations

import asyncio
import logging
import time

import httpx

from mailbridge import __version__
from mailbridge.clock import Clock
from mailbridge.mail.http_post import Poster, TransportPoster
from mailbridge.mail.targets import PinnedTarget, TargetRefused, pin
from mailbridge.services.webhooks._deliveries import ClaimedDelivery, DeliveryOutcome
from mailbridge.services.webhooks._signatures import delivery_headers

logger = logging.getLogger(__name__)

USER_AGENT = f"mailbridge-webhooks/{__version__}"
SNIPPET = 200  # characters of a failing answer's body kept in the error
TARGET_TTL = 30.0  # seconds a checked endpoint (and its address) is reused


class WebhookSender:
    def __init__(
        self,
        poster: Poster | httpx.AsyncBaseTransport,
        clock: Clock,
        *,
        timeout: float,
        allow_private: bool,
    ) -> None:
        if isinstance(poster, httpx.AsyncBaseTransport):
            poster = TransportPoster(poster)
        self.poster = poster
        self.clock = clock
        self.timeout = timeout
        self.allow_private = allow_private
        self._targets: dict[str, tuple[float, PinnedTarget]] = {}

    async def attempt(self, delivery: ClaimedDelivery) -> DeliveryOutcome:
        attempted_at = self.clock.now()
        if not delivery.webhook_enabled:
            return DeliveryOutcome(delivery, attempted_at, None, 0, "webhook disabled")
        started = time.perf_counter()
        status_code: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self.timeout):
                status_code, error = await self._post(delivery, int(attempted_at.timestamp()))
        except TimeoutError:
            error = f"no answer within {self.timeout:g} s"
        except TargetRefused as exc:
            error = str(exc)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        except Exception as exc:
            # A bug of ours, not the endpoint's: logged, and the attempt counts as failed
            # so that the delivery keeps to its schedule.
            logger.exception("webhook delivery %s: unexpected error", delivery.id)
            error = f"internal error ({type(exc).__name__})"
        duration_ms = round((time.perf_counter() - started) * 1000)
        return DeliveryOutcome(delivery, attempted_at, status_code, duration_ms, error)

    async def _post(self, delivery: ClaimedDelivery, timestamp: int) -> tuple[int, str | None]:
        target = await self._target(delivery.endpoint)
        body = delivery.body.encode()
        headers = {
            **target.headers,
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            **delivery_headers(
                delivery.secret, delivery.previous_secret, timestamp, delivery.body,
                delivery.event_id,
            ),
        }  # fmt: skip
        status, content = await self.poster.post(target, headers, body)
        if 200 <= status < 300:
            return status, None
        snippet = content[: SNIPPET * 4].decode("utf-8", "replace")[:SNIPPET].strip()
        return status, f"answered {status}" + (f": {snippet}" if snippet else "")

    async def _target(self, endpoint: str) -> PinnedTarget:
        """The endpoint checked and pinned; refusals are never remembered."""
        now = time.monotonic()
        cached = self._targets.get(endpoint)
        if cached is not None and cached[0] > now:
            return cached[1]
        target = await pin(endpoint, allow_private=self.allow_private, what="endpoint")
        if len(self._targets) > 10_000:
            self._targets = {k: v for k, v in self._targets.items() if v[0] > now}
        self._targets[endpoint] = (now + TARGET_TTL, target)
        return target
