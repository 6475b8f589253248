"""The inbox agent worker: the queue of received messages offered to the agent at
``MAILBRIDGE_INBOX_AGENT_URL`` (``services.inboxes``' agent calls).

Driven by the claim loop: due calls are leased in a batch, each request POSTed in a task
of its own — JSON, signed as a webhook delivery is (``X-Service-Signature`` and Standard
Webhooks' headers, keyed with ``MAILBRIDGE_INBOX_AGENT_SECRET``; the event id is the
call's id, the same on every retry) — and the answer applied by
``automations.apply_agent_answer`` in one transaction with the call marked done. A
connection error, a timeout or a status other than 2xx is tried again later (the
policy's delays); an answer that is not ``{"actions": [...]}`` fails the call at once:
asking again would get the same. A runner killed mid-call leaves the call leased; the
lease runs out and another runner asks again — the agent may see a repeat (same
``webhook-id``), the actions are applied once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timedelta

import httpx

from mailbridge import __version__
from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, new_owner
from mailbridge.services import automations, inboxes
from mailbridge.services.inboxes import AgentRequest
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks import delivery_headers

logger = logging.getLogger(__name__)

USER_AGENT = f"mailbridge-inbox-agent/{__version__}"
MAX_ANSWER = 1024 * 1024  # bytes of an answer read; past it the attempt failed
CONCURRENCY = 8  # requests in flight: an agent is one service, often a slow model


class AnswerRefused(Exception):
    """The agent answered, but not what may be applied: asking again would not help."""


class InboxAgentWorker:
    name = "inbox-agent"

    def __init__(
        self,
        context: ServiceContext,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        owner: str | None = None,
        poll_interval: float | None = None,
    ) -> None:
        settings = context.settings
        if not settings.inbox_agent_url or settings.inbox_agent_secret is None:
            raise ValueError("the inbox agent worker needs MAILBRIDGE_INBOX_AGENT_URL and _SECRET")
        self.context = context
        self.url = settings.inbox_agent_url
        self._secret = settings.inbox_agent_secret
        self.timeout = settings.inbox_agent_timeout
        self.owner = owner or new_owner()
        self.lease = timedelta(seconds=self.timeout * 2 + 10)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        poll = poll_interval or settings.runner_poll_interval
        limits = Limits(CONCURRENCY, poll, CONCURRENCY, 1, stop_grace=1.0)
        self._loop: ClaimLoop[AgentRequest] = ClaimLoop(self, context.clock, limits)

    def notify(self) -> None:
        self._loop.notify(due_now=True)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    async def ask_due(self) -> int:
        """Ask about every due call and apply the answers (tests, operators); how many."""
        await self.open()
        total = 0
        try:
            while claimed := (await self.claim(CONCURRENCY)).items:
                total += len(claimed)
                await asyncio.gather(*(self.process(request) for request in claimed))
        finally:
            await self.close()
        return total

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def open(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=self._transport, timeout=self.timeout, follow_redirects=False
            )

    async def next_due(self) -> datetime | None:
        async with self.context.database.session() as session:
            return await inboxes.next_agent_call_due(session, self.context.clock.now())

    async def claim(self, limit: int) -> Batch[AgentRequest]:
        context = self.context
        claimed = await inboxes.claim_agent_calls(
            context.database, context.clock, self.owner, self.lease, limit
        )
        return Batch(claimed, more=len(claimed) == limit)

    async def process(self, item: AgentRequest) -> None:
        context = self.context
        try:
            actions = inboxes.parse_answer(await self._ask(item))
        except AnswerRefused as refused:
            await self._failed(item, str(refused), final=True)
            return
        except (httpx.HTTPError, ValueError) as failed:
            final = isinstance(failed, ValueError)  # not {"actions": [...]}
            await self._failed(item, str(failed) or type(failed).__name__, final=final)
            return
        outcome = await automations.apply_agent_answer(context, item.call_id, self.owner, actions)
        if outcome is not None and outcome["refused"]:
            logger.info("inbox agent: call %s: refused %s", item.call_id, outcome["refused"])

    async def close(self) -> None:
        await inboxes.release_agent_calls(self.context.database, self.owner)
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _ask(self, item: AgentRequest) -> bytes:
        assert self._client is not None
        timestamp = int(time.time())
        secret = self._secret.get_secret_value()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            **delivery_headers(secret, None, timestamp, item.body, item.call_id),
        }
        async with self._client.stream(
            "POST", self.url, content=item.body.encode(), headers=headers
        ) as response:
            answer = bytearray()
            async for chunk in response.aiter_bytes():
                answer += chunk
                if len(answer) > MAX_ANSWER:
                    raise AnswerRefused(f"the answer is over {MAX_ANSWER} bytes")
            if not 200 <= response.status_code < 300:
                raise httpx.HTTPStatusError(
                    f"the agent answered {response.status_code}",
                    request=response.request, response=response,
                )  # fmt: skip
        return bytes(answer)

    async def _failed(self, item: AgentRequest, error: str, *, final: bool) -> None:
        logger.warning("inbox agent: call %s failed: %s", item.call_id, error)
        context = self.context
        await inboxes.agent_call_failed(
            context.database, context.clock, item.call_id, self.owner, error, final=final
        )
