"""The delivery worker: the queue of due emails, each handed to the provider exactly once.

Driven by the claim loop (``runner.claim_loop``): due emails are claimed in batches
(``services.email``) while there is room — at most ``settings.delivery_concurrency``
deliveries in flight — after a read-only "next due" look at the due index, which
:meth:`DeliveryWorker.notify` (the API stored new emails in this process) or a full
last batch (a backlog being worked through) spares. A few times a lease the claim first
takes the handovers whose runner died before recording their outcome (and sweeps the
file outbox of attempts that are over).

Each delivery is a ``runner.delivery_attempt.DeliveryAttempt``: simulated recipients
apart; the message built (attachments fetched, tracking, DKIM — composed and signed in
a worker process when ``render_processes`` says so, as ``mailbridge runner`` and
``serve`` do on a machine with two cores or more); the provider prepares the handover;
the journal commits ``sent`` for a whole group of deliveries and completes their
handovers right after the commit; then the provider's answer is read and recorded
(``services.delivery``'s journal).

Stopping: no more claims; deliveries in flight get ``stop_grace`` seconds to finish,
the rest are cancelled; leases on emails not handed over are given back at once. An
email handed over but not answered stays leased and is settled after its lease by
whichever runner claims it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import NamedTuple

import httpx
from structlog.contextvars import bind_contextvars

from mailbridge.mail.providers import OutboxProvider, SmtpProvider, provider_from_settings
from mailbridge.mail.providers.base import (
    Provider,
)
from mailbridge.mail.rendering import SHIPPED, LocalRenderer, ProcessRenderer, Renderer, RenderPaths
from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, new_owner, write_turn
from mailbridge.runner.delivery_attempt import DeliveryAttempt
from mailbridge.runner.delivery_leftovers import discard_old_receipts, sweep_outbox
from mailbridge.services import delivery
from mailbridge.services.delivery import (
    EMAIL_RETRY_POLICY,
    DeliveryJournal,
    MessageBuilder,
    RetryPolicy,
)
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.outages import describe, is_unavailable
from mailbridge.storage.tables import Domain, Email, EmailAttachment

logger = logging.getLogger(__name__)

STOP_GRACE = 10.0  # seconds deliveries in flight get to finish when the runner stops


def default_render_processes() -> int:
    """A process that composes and signs, when there is a core for it."""
    return 1 if (os.cpu_count() or 1) >= 2 else 0


class ClaimedEmail(NamedTuple):
    email: Email
    domain: Domain | None
    attachments: Sequence[EmailAttachment]  # without their bytes
    handed_over_by: str | None  # an unsettled handover: the runner that made it


class DeliveryWorker:
    name = "delivery"

    def __init__(
        self,
        context: ServiceContext,
        *,
        provider: Provider | None = None,
        owner: str | None = None,
        retry_policy: RetryPolicy = EMAIL_RETRY_POLICY,
        http: httpx.AsyncClient | None = None,
        stop_grace: float = STOP_GRACE,
        poll_interval: float | None = None,
        render_processes: int = 0,
        render_paths: RenderPaths = SHIPPED,
    ) -> None:
        self.context = context
        self.settings = context.settings
        self.poll_interval = poll_interval or self.settings.runner_poll_interval
        self.owner = owner or new_owner()
        self.retry_policy = retry_policy
        self.stop_grace = stop_grace
        self.concurrency = self.settings.delivery_concurrency
        self.batch_size = self.settings.delivery_batch_size
        # Claim when a quarter of the slots are free, not at every finished delivery:
        # fewer, larger claim transactions.
        self.refill = max(1, min(self.batch_size, self.concurrency // 4))
        self.lease = timedelta(seconds=self.settings.delivery_lease_seconds)
        # A dead runner's handover comes due a lease after it was made, so looking a few
        # times a lease is enough (the look scans the due index, a backlog included).
        self.settle_check_every = max(1.0, self.lease.total_seconds() / 4)
        self.render_processes = render_processes
        # The delivery bench's switch to the library paths (``RenderPaths``); nothing else's.
        self.render_paths = render_paths
        self._renderer: Renderer | None = None
        self._given_provider = provider
        self._given_http = http
        self._provider: Provider | None = None
        self._http: httpx.AsyncClient | None = None
        self._journal: DeliveryJournal | None = None
        self._attempt: DeliveryAttempt | None = None  # made at open
        self._write_lock = asyncio.Lock()  # SQLite: claims and journal commits take turns
        self._busy: set[str] = set()  # the emails being delivered: never claimed again
        self._next_housekeeping = 0.0  # time.monotonic(): unsettled handovers, outbox files
        self._look_before_claiming = False  # next_due said "now" for the housekeeping
        limits = Limits(
            self.batch_size, self.poll_interval, self.concurrency, self.refill, stop_grace
        )
        self._loop: ClaimLoop[ClaimedEmail] = ClaimLoop(self, context.clock, limits)

    # --- lifecycle ------------------------------------------------------------------

    def notify(self) -> None:
        """New emails are due: claim them now rather than at the next poll."""
        self._loop.notify(due_now=True)

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            raise RuntimeError("the delivery worker is not open")
        return self._provider

    @property
    def attempt(self) -> DeliveryAttempt:
        if self._attempt is None:
            raise RuntimeError("the delivery worker is not open")
        return self._attempt

    @property
    def journal(self) -> DeliveryJournal:
        if self._journal is None:
            raise RuntimeError("the delivery worker is not open")
        return self._journal

    async def open(self) -> None:
        if self._journal is not None:
            return
        context = self.context
        # First, so that a database out of reach leaves nothing half made (run() retries).
        secret = await instance_secret(context.database, self.settings)
        self._provider = self._given_provider or provider_from_settings(self.settings)
        self._http = self._given_http or httpx.AsyncClient(follow_redirects=False, trust_env=False)
        if self.render_processes > 0:
            self._renderer = ProcessRenderer(self.render_processes, self.render_paths)
        else:
            self._renderer = LocalRenderer(self.render_paths)
        await self._renderer.start()
        builder = MessageBuilder(self.settings, context.clock, secret, self._http, self._renderer)
        self._journal = DeliveryJournal(
            context.database, context.clock, self.owner,
            lease=self.lease, retry_policy=self.retry_policy, write_lock=self._write_lock,
        )  # fmt: skip
        self._journal.start()
        self._attempt = DeliveryAttempt(
            context.database, self._provider, self._journal, builder, secret, self.owner,
            self.settings.test_domain,
        )  # fmt: skip
        if isinstance(self._provider, OutboxProvider):
            await self.sweep_outbox(self._provider)
        if isinstance(self._provider, SmtpProvider) and self._provider.receipts is not None:
            await discard_old_receipts(context.database, self._provider.receipts, self.owner)

    async def close(self) -> None:
        """Once the deliveries in flight are over (the loop drained them)."""
        if self._journal is None:
            return
        await self._journal.stop()
        try:
            async with self.context.database.session() as session:
                await delivery.release_emails(session, self.owner)
                await session.commit()
        except Exception:
            logger.exception("could not release the delivery leases of %s", self.owner)
        await self.provider.close()
        if self._renderer is not None:
            await self._renderer.close()
        if self._given_http is None and self._http is not None:
            await self._http.aclose()
        self._journal = self._attempt = None

    async def __aenter__(self) -> DeliveryWorker:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    async def deliver_due(self) -> int:
        """Claim and deliver until nothing is due, unsettled handovers included (tests,
        operators); the number claimed."""
        await self.open()
        total = 0
        while True:
            claimed = await self._claim_unsettled(self.batch_size)
            claimed += await self._claim_due(self.batch_size)
            total += len(claimed)
            await asyncio.gather(*(self.process(item) for item in claimed))
            if not claimed:
                return total

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def next_due(self) -> datetime | None:
        now = self.context.clock.now()
        if time.monotonic() >= self._next_housekeeping:  # the claim looks itself (below)
            self._look_before_claiming = True
            return now
        async with self.context.database.session() as session:
            return await delivery.next_email_due_at(session, now)

    async def claim(self, limit: int) -> Batch[ClaimedEmail]:
        """Due emails; a few times a lease, first the handovers whose runner died before
        recording their outcome (and the outbox swept)."""
        unsettled: list[ClaimedEmail] = []
        if time.monotonic() >= self._next_housekeeping:
            self._next_housekeeping = time.monotonic() + self.settle_check_every
            if isinstance(self._provider, OutboxProvider):
                await self.sweep_outbox(self._provider)
            unsettled = await self._claim_unsettled(limit)
            limit -= len(unsettled)
        if self._look_before_claiming:
            self._look_before_claiming = False
            now = self.context.clock.now()
            async with self.context.database.session() as session:
                due_at = await delivery.next_email_due_at(session, now)
            if due_at is None or due_at > now:
                limit = 0
        if limit <= 0:
            return Batch(unsettled)
        claimed = await self._claim_due(limit)
        return Batch(unsettled + claimed if unsettled else claimed, more=len(claimed) == limit)

    async def process(self, item: ClaimedEmail) -> None:
        email = item.email
        bind_contextvars(email_id=email.id)  # this delivery's own task: its lines only
        try:
            await self.attempt.run(email, item.domain, item.attachments, item.handed_over_by)
            logger.debug("delivery attempt over")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The lease runs out and the email is tried again.
            if is_unavailable(exc):
                logger.warning("delivering email %s: database unavailable (%s); tried again "
                               "after its lease", email.id, describe(exc))  # fmt: skip
            else:
                logger.exception("delivering email %s failed", email.id)
        finally:
            self._busy.discard(email.id)

    # --- claiming -------------------------------------------------------------------

    def _writing(self) -> contextlib.AbstractAsyncContextManager[object]:
        return write_turn(self.context.database, self._write_lock)

    async def _claim_due(self, limit: int) -> list[ClaimedEmail]:
        async with self._writing():
            batch = await delivery.claim_emails(
                self.context.database,
                self.context.clock.now(),
                self.owner,
                self.lease,
                limit,
                busy=set(self._busy),
            )
        return self._taken(batch)

    async def _claim_unsettled(self, limit: int) -> list[ClaimedEmail]:
        """Lease handovers whose runner died before recording their outcome."""
        now = self.context.clock.now()
        async with self.context.database.session() as session:
            if not await delivery.any_unsettled_emails(session, now):
                return []
        async with self._writing(), self.context.database.session() as session:
            batch = await delivery.claim_unsettled_emails(
                session, now, self.owner, self.lease, limit, busy=set(self._busy)
            )
            await session.commit()
        return self._taken(batch)

    def _taken(self, batch: delivery.ClaimedBatch) -> list[ClaimedEmail]:
        busy, domains, attachments = self._busy, batch.domains, batch.attachments
        taken = []
        for email in batch.emails:
            busy.add(email.id)
            domain = domains.get(email.domain_id) if email.domain_id else None
            taken.append(
                ClaimedEmail(
                    email,
                    domain,
                    attachments.get(email.id, ()),
                    batch.handed_over_by.get(email.id),
                )
            )
        return taken

    async def sweep_outbox(self, outbox: OutboxProvider) -> None:
        """Pending outbox files of attempts that are over (``runner.delivery_leftovers``)."""
        await sweep_outbox(self.context.database, outbox)
