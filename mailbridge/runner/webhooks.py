"""The webhook worker: the queue of due webhook deliveries, each POSTed signed.

Driven by the claim loop (``runner.claim_loop``): deliveries are claimed in batches
(``services.webhooks``) while there is room — at most ``settings.webhook_concurrency``
attempts in flight — after a read-only "next due" look, which the fan-out spares when it
adds deliveries in this process (:meth:`WebhookWorker.deliveries_added`).

Outcomes are written in groups: attempts that finish while a group is being written
wait for the next one, so under load one transaction records many of them, and when
idle each is written at once. An attempt keeps its slot until its outcome is
committed, so at most ``webhook_concurrency`` deliveries are ever POSTed and not yet
recorded. A runner killed before writing an outcome leaves the delivery leased; the
lease runs out and it is attempted again — receivers see a repeat with the same
``X-Service-Event-Id`` (at most ``webhook_concurrency`` a kill), never a loss.

Stopping: no more claims; attempts in flight get ``stop_grace`` seconds, the rest are
cancelled; the outcomes are written and the leases of attempts that never finished are
given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta

import httpx
from structlog.contextvars import bind_contextvars

from mailbridge.mail.http_post import AiohttpPoster, Poster
from mailbridge.runner.backoff import Backoff
from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, new_owner, write_turn
from mailbridge.services import webhooks
from mailbridge.services.delivery import RetryPolicy
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.operations import webhook_attempted
from mailbridge.services.webhooks import (
    WEBHOOK_RETRY_POLICY,
    ClaimedDelivery,
    DeliveryOutcome,
    WebhookSender,
)

logger = logging.getLogger(__name__)

STOP_GRACE = 10.0  # seconds attempts in flight get to finish when the runner stops


class WebhookWorker:
    name = "webhooks"

    def __init__(
        self,
        context: ServiceContext,
        *,
        transport: Poster | httpx.AsyncBaseTransport | None = None,
        owner: str | None = None,
        retry_policy: RetryPolicy = WEBHOOK_RETRY_POLICY,
        poll_interval: float | None = None,
        stop_grace: float = STOP_GRACE,
        write_lock: asyncio.Lock | None = None,
    ) -> None:
        self.context = context
        settings = context.settings
        self.owner = owner or new_owner()
        self.retry_policy = retry_policy
        self.poll_interval = poll_interval or settings.runner_poll_interval
        self.stop_grace = stop_grace
        self.concurrency = settings.webhook_concurrency
        self.batch_size = settings.webhook_batch_size
        # The lease outlasts an attempt's timeout, so a live runner keeps its claim.
        self.lease = timedelta(
            seconds=max(settings.webhook_lease_seconds, settings.webhook_timeout + 2)
        )
        self.disable_after = timedelta(seconds=settings.webhook_disable_after)
        self.refill = max(1, min(self.batch_size, self.concurrency // 4))
        self._given_transport = transport
        self._poster: Poster | None = None  # made by the worker when none is given
        self._sender: WebhookSender | None = None
        # Outcomes not yet written, each with the future its attempt waits on.
        self._outcomes: list[tuple[DeliveryOutcome, asyncio.Future[None]]] = []
        self._outcomes_waiting = asyncio.Event()
        self._recorder: asyncio.Task[None] | None = None
        self._record_lock = asyncio.Lock()
        # SQLite: claims and outcome writes take turns (with the dispatcher's, when it shares
        # the lock) rather than meet in SQLite's busy handler, which sleeps.
        self._write_lock = write_lock or asyncio.Lock()
        self._record_backoff = Backoff(f"{self.name} outcomes")
        self.record_commits = 0  # transactions that wrote outcomes (benchmarks)
        limits = Limits(
            self.batch_size, self.poll_interval, self.concurrency, self.refill, stop_grace
        )
        self._loop: ClaimLoop[ClaimedDelivery] = ClaimLoop(self, context.clock, limits)

    def notify(self) -> None:
        """Something may have come due (``Runner.notify``): look now, not at the next poll."""
        self._loop.notify()

    def deliveries_added(self) -> None:
        """The fan-out committed deliveries due now: claim without looking first."""
        self._loop.notify(due_now=True)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    async def deliver_due(self) -> int:
        """Claim and attempt until nothing is due, outcomes written (tests, operators);
        the number of attempts made."""
        await self.open()
        total = 0
        while claimed := (await self.claim(self.batch_size)).items:
            total += len(claimed)
            await asyncio.gather(*(self.process(delivery) for delivery in claimed))
            await self._write_outcomes()
        return total

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def open(self) -> None:
        if self._sender is not None:
            return
        poster = self._given_transport
        if poster is None:
            poster = self._poster = AiohttpPoster()
        settings = self.context.settings
        self._sender = WebhookSender(
            poster,
            self.context.clock,
            timeout=settings.webhook_timeout,
            allow_private=settings.webhook_allow_private,
        )
        self._recorder = asyncio.create_task(self._record_loop(), name="webhook-outcomes")

    async def next_due(self) -> datetime | None:
        async with self.context.database.session() as session:
            return await webhooks.next_delivery_due_at(session)

    async def claim(self, limit: int) -> Batch[ClaimedDelivery]:
        async with self._writing(), self.context.database.session() as session:
            claimed = await webhooks.claim_due_deliveries(
                session, self.context.clock.now(), self.owner, self.lease, limit
            )
            await session.commit()
        return Batch(claimed, more=len(claimed) == limit)

    async def process(self, item: ClaimedDelivery) -> None:
        assert self._sender is not None
        bind_contextvars(webhook_delivery_id=item.id)  # this attempt's own task
        try:
            outcome = await self._sender.attempt(item)
        except Exception:
            # The lease runs out and the delivery is attempted again.
            logger.exception("attempting webhook delivery %s failed", item.id)
            return
        logger.debug("webhook attempt answered %s", outcome.status_code)
        webhook_attempted(outcome.status_code)
        written = asyncio.get_running_loop().create_future()
        self._outcomes.append((outcome, written))
        self._outcomes_waiting.set()
        await written  # the slot stays taken until the outcome is committed

    async def close(self) -> None:
        """Once the attempts in flight are over (the loop drained them)."""
        if self._sender is None:
            return
        if self._recorder is not None:
            self._recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recorder
            self._recorder = None
        try:
            await self._write_outcomes()
            async with self._writing(), self.context.database.session() as session:
                await webhooks.release_deliveries(session, self.owner, self.context.clock.now())
                await session.commit()
        except Exception:
            logger.exception("could not record outcomes or release the leases of %s", self.owner)
        if self._poster is not None:
            await self._poster.aclose()
            self._poster = None
        self._sender = None

    def _writing(self) -> contextlib.AbstractAsyncContextManager[object]:
        return write_turn(self.context.database, self._write_lock)

    # --- outcomes ----------------------------------------------------------------------

    async def _record_loop(self) -> None:
        while True:
            await self._outcomes_waiting.wait()
            try:
                await self._write_outcomes()
            except Exception as exc:  # the outcomes are kept for the next write
                await self._record_backoff.failed(exc, "recording webhook outcomes")
                continue
            self._record_backoff.succeeded()

    async def _write_outcomes(self) -> None:
        # One write at a time: a caller that finds the outcomes taken by a write in
        # progress returns only once they are committed.
        async with self._record_lock:
            await self._write_waiting_outcomes()

    async def _write_waiting_outcomes(self) -> None:
        self._outcomes_waiting.clear()
        waiting, self._outcomes = self._outcomes, []
        if not waiting:
            return
        try:
            async with self._writing(), self.context.database.session() as session:
                disabled = await webhooks.record_outcomes(
                    session,
                    self.context.clock.now(),
                    self.owner,
                    [outcome for outcome, _written in waiting],
                    retry_policy=self.retry_policy,
                    disable_after=self.disable_after,
                )
                await session.commit()
        except BaseException:
            self._outcomes[:0] = waiting  # kept for the next write
            self._outcomes_waiting.set()
            raise
        self.record_commits += 1
        for _outcome, written in waiting:
            if not written.done():  # an attempt cancelled at stop no longer waits
                written.set_result(None)
        if any(outcome.delivery.sequence_key for outcome, _written in waiting):
            self._loop.notify()  # the next of a sequence may be due now: look
        for hook_id in disabled:
            logger.warning("webhook %s disabled: its endpoint kept failing", hook_id)
