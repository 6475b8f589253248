"""The delivery worker: claims due emails and hands them to the provider, exactly once.

The loop claims due emails in batches (``services.delivery_queue``) while it has
room — at most ``settings.delivery_concurrency`` deliveries in flight — and
otherwise sleeps until :meth:`DeliveryWorker.notify` (the API stored new emails in
this process), a delivery finishing, or the poll interval (≤ 250 ms), after which a
read-only "next due" query on the due index says whether a claim is worth a write —
unless the last claim took a full batch: then a backlog is being worked through and
the next claim goes ahead without asking.

Each delivery: simulated recipients apart; the message built (attachments fetched,
tracking, DKIM — composed and signed in a worker process when ``render_processes``
says so, as ``mailbridge runner`` and ``serve`` do on a machine with two cores or
more); the provider prepares the handover; the journal commits ``sent``
for a whole group of deliveries and completes their handovers right after the
commit; then the provider's answer is read and recorded (``services.delivery_journal``).

Stopping (``stopping`` set): no more claims; deliveries in flight get
``stop_grace`` seconds to finish, the rest are cancelled; leases on emails not
handed over are given back at once. An email handed over but not answered stays
leased and is settled after its lease by whichever runner claims it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Awaitable, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType

import httpx
from structlog.contextvars import bind_contextvars

from mailbridge.mail.providers import OutboxProvider, SmtpProvider, provider_from_settings
from mailbridge.mail.providers.base import OUTCOME_TYPES, Delivery, Handover, Provider
from mailbridge.mail.providers.simulator import split_recipients
from mailbridge.mail.rendering import SHIPPED, LocalRenderer, ProcessRenderer, Renderer, RenderPaths
from mailbridge.runner.backoff import Backoff
from mailbridge.services import email as emails
from mailbridge.services.context import ServiceContext
from mailbridge.services.email import EMAIL_RETRY_POLICY as RETRY_POLICY
from mailbridge.services.email import (
    BuiltMessage,
    DeliveryJournal,
    MessageBuilder,
    MessageNotBuilt,
    RetryPolicy,
    envelope_sender,
)
from mailbridge.services.instance import instance_secret
from mailbridge.storage.outages import describe, is_unavailable
from mailbridge.storage.tables import Domain, Email, EmailAttachment

logger = logging.getLogger(__name__)

STOP_GRACE = 10.0  # seconds deliveries in flight get to finish when the runner stops


def default_render_processes() -> int:
    """A process that composes and signs, when there is a core for it."""
    return 1 if (os.cpu_count() or 1) >= 2 else 0


def new_owner() -> str:
    """A lease owner name unique to this worker: host, pid and a random part."""
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32]
    return f"{host}-{os.getpid()}-{secrets.token_hex(4)}"


class DeliveryWorker:
    name = "delivery"

    def __init__(
        self,
        context: ServiceContext,
        *,
        provider: Provider | None = None,
        owner: str | None = None,
        retry_policy: RetryPolicy = RETRY_POLICY,
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
        self._builder: MessageBuilder | None = None
        self._secret = b""  # the instance secret, read at open (return-path tags)
        self._write_lock = asyncio.Lock()  # SQLite: claims and journal commits take turns
        self._in_flight: set[asyncio.Task[None]] = set()
        self._busy: dict[asyncio.Task[None], str] = {}  # email id of each delivery in flight
        self._signal = asyncio.Event()
        self._woken = False
        self._backlog = False
        self._backoff = Backoff(self.name)

    # --- lifecycle ------------------------------------------------------------------

    def notify(self) -> None:
        """New emails are due: claim them now rather than at the next poll."""
        self._woken = True
        self._signal.set()

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            raise RuntimeError("the delivery worker is not open")
        return self._provider

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
        secret = self._secret = await instance_secret(context.database, self.settings)
        self._provider = self._given_provider or provider_from_settings(self.settings)
        self._http = self._given_http or httpx.AsyncClient(follow_redirects=False, trust_env=False)
        if self.render_processes > 0:
            self._renderer = ProcessRenderer(self.render_processes, self.render_paths)
        else:
            self._renderer = LocalRenderer(self.render_paths)
        await self._renderer.start()
        self._builder = MessageBuilder(
            self.settings, context.clock, secret, self._http, self._renderer
        )
        self._journal = DeliveryJournal(
            context.database, context.clock, self.owner,
            lease=self.lease, retry_policy=self.retry_policy, write_lock=self._write_lock,
        )  # fmt: skip
        self._journal.start()
        if isinstance(self._provider, OutboxProvider):
            await self.sweep_outbox(self._provider)
        if isinstance(self._provider, SmtpProvider) and self._provider.receipts is not None:
            await self._discard_old_receipts(self._provider.receipts)

    async def close(self) -> None:
        if self._journal is None:
            return
        if self._in_flight:
            _done, late = await asyncio.wait(set(self._in_flight), timeout=self.stop_grace)
            for task in late:
                task.cancel()
            if late:
                await asyncio.gather(*late, return_exceptions=True)
        await self._journal.stop()
        try:
            async with self.context.database.session() as session:
                await emails.release_emails(session, self.owner)
                await session.commit()
        except Exception:
            logger.exception("could not release the delivery leases of %s", self.owner)
        await self.provider.close()
        if self._renderer is not None:
            await self._renderer.close()
        if self._given_http is None and self._http is not None:
            await self._http.aclose()
        self._journal = None

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
        while not stopping.is_set():  # the database may be out of reach at start
            try:
                await self.open()
                break
            except Exception as exc:
                await self._backoff.failed(exc, "opening", stopping)
        watcher = asyncio.create_task(self._wake_on(stopping))
        try:
            await self._loop(stopping)
        finally:
            watcher.cancel()
            await self.close()

    async def _wake_on(self, stopping: asyncio.Event) -> None:
        await stopping.wait()
        self._signal.set()

    # --- claiming -------------------------------------------------------------------

    async def _loop(self, stopping: asyncio.Event) -> None:
        poll = self.poll_interval
        next_settle_check = 0.0
        next_sweep = time.monotonic() + self.settle_check_every
        while not stopping.is_set():
            # Cleared before looking, so a notify() that arrives while we look is kept.
            self._signal.clear()
            free = self.concurrency - len(self._in_flight)
            try:
                if isinstance(self._provider, OutboxProvider) and time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + self.settle_check_every
                    await self.sweep_outbox(self._provider)
                if free > 0 and time.monotonic() >= next_settle_check:
                    next_settle_check = time.monotonic() + self.settle_check_every
                    free -= await self._claim_unsettled(free)
                if free >= self.refill or (free > 0 and not self._in_flight):
                    wanted = min(free, self.batch_size)
                    # A full batch: more may be due, claim again at once (and next time
                    # without asking first).
                    self._backlog = (
                        await self._due() and await self._claim_and_start(wanted) == wanted
                    )
                    if self._backlog:
                        continue
            except Exception as exc:
                await self._backoff.failed(exc, "claiming due emails", stopping)
                continue
            self._backoff.succeeded()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(poll):
                    await self._signal.wait()

    async def _due(self) -> bool:
        """Whether a claim is worth a write transaction: told so, the last claim was a
        full batch (a backlog), or the due index says so."""
        if self._woken or self._backlog:
            self._woken = False
            return True
        now = self.context.clock.now()
        async with self.context.database.session() as session:
            due_at = await emails.next_email_due_at(session, now)
        return due_at is not None and due_at <= now

    def _writing(self) -> contextlib.AbstractAsyncContextManager[object]:
        return self._write_lock if self.context.database.is_sqlite else contextlib.nullcontext()

    async def _claim_and_start(self, limit: int) -> int:
        async with self._writing():
            batch = await emails.claim_emails(
                self.context.database,
                self.context.clock.now(),
                self.owner,
                self.lease,
                limit,
                busy=set(self._busy.values()),
            )
        self._start(batch)
        return len(batch.emails)

    async def _claim_unsettled(self, limit: int) -> int:
        """Lease handovers whose runner died before recording their outcome."""
        now = self.context.clock.now()
        async with self.context.database.session() as session:
            if not await emails.any_unsettled_emails(session, now):
                return 0
        async with self._writing(), self.context.database.session() as session:
            batch = await emails.claim_unsettled_emails(
                session, now, self.owner, self.lease, limit, busy=set(self._busy.values())
            )
            await session.commit()
        self._start(batch)
        return len(batch.emails)

    def _start(self, batch: emails.ClaimedBatch) -> None:
        for email in batch.emails:
            domain = batch.domains.get(email.domain_id) if email.domain_id else None
            handed_over_by = batch.handed_over_by.get(email.id)
            if handed_over_by is not None:
                delivery = self._settle(email, domain, handed_over_by)
            else:
                delivery = self._attempt(email, domain, batch.attachments.get(email.id, []))
            task = asyncio.create_task(self._guarded(email, delivery))
            self._in_flight.add(task)
            self._busy[task] = email.id
            task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._busy.pop(task, None)
        self._signal.set()

    async def deliver_due(self) -> int:
        """Claim and deliver until nothing is due, unsettled handovers included (tests,
        operators); the number claimed."""
        await self.open()
        total = 0
        while True:
            claimed = await self._claim_unsettled(self.batch_size)
            claimed += await self._claim_and_start(self.batch_size)
            total += claimed
            if self._in_flight:
                await asyncio.gather(*set(self._in_flight), return_exceptions=True)
            if claimed == 0:
                return total

    # --- one delivery ---------------------------------------------------------------

    async def _guarded(self, email: Email, delivery: Awaitable[None]) -> None:
        bind_contextvars(email_id=email.id)  # this delivery's own task: its lines only
        try:
            await delivery
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

    async def _attempt(
        self, email: Email, domain: Domain | None, attachments: Sequence[EmailAttachment]
    ) -> None:
        journal = self.journal
        real, simulated = split_recipients(email.delivery_recipients, self.settings.test_domain)
        if not real:
            await journal.record_simulated(email, simulated)
            return
        try:
            message = await self._build(email, domain, attachments)
        except MessageNotBuilt as exc:
            await journal.record(email, exc.outcome, simulated)
            return
        delivery = Delivery(email.id, message.sender, tuple(real), self.owner, email.attempts)
        prepared = await self.provider.prepare(delivery, message.content)
        if isinstance(prepared, OUTCOME_TYPES):
            await journal.record(email, prepared, simulated)
            return
        if not await self._hand_over(email, prepared):
            return
        outcome = await prepared.outcome()
        await journal.record(email, outcome, simulated)

    async def _hand_over(self, email: Email, handover: Handover) -> bool:
        """Whether the handover was committed (and so completed); abandoned if not."""
        decision = self.journal.submit_handover(email, handover)
        try:
            committed = await asyncio.shield(decision)
        except asyncio.CancelledError:
            # The journal may be committing it this very moment: learn its decision
            # before giving up, so a committed handover is never abandoned.
            with contextlib.suppress(Exception):
                if not await decision:
                    handover.abandon()
            raise
        except Exception:
            handover.abandon()
            raise
        if not committed:
            handover.abandon()
        return committed

    async def _build(
        self, email: Email, domain: Domain | None, attachments: Sequence[EmailAttachment]
    ) -> BuiltMessage:
        assert self._builder is not None
        stored = [attachment.id for attachment in attachments if not attachment.path]
        contents: dict[str, bytes] = {}
        if stored:
            async with self.context.database.session() as session:
                contents = await emails.attachment_contents(session, stored)
        return await self._builder.build(email, domain, attachments, contents)

    async def _settle(self, email: Email, domain: Domain | None, handed_over_by: str) -> None:
        real, simulated = split_recipients(email.delivery_recipients, self.settings.test_domain)
        delivery = Delivery(
            email.id,
            envelope_sender(email, domain, self._secret),
            tuple(real),
            handed_over_by,
            email.attempts,
        )
        outcome = await self.provider.settle(delivery)
        await self.journal.record(email, outcome, simulated)

    async def _discard_old_receipts(self, receipts: Path) -> None:
        """Receipt books of runners that hold no lease any more: nothing left to settle
        from them."""
        others = [name for name in await asyncio.to_thread(_books, receipts) if name != self.owner]
        if not others:
            return
        async with self.context.database.session() as session:
            holding = await emails.owners_holding_leases(session, others)
        for owner in others:
            if owner not in holding:
                with contextlib.suppress(FileNotFoundError):
                    (receipts / f"{owner}.receipts").unlink()

    async def sweep_outbox(self, outbox: OutboxProvider) -> None:
        """Pending outbox files of attempts that are over, at start-up and while running
        (their runner was killed before the handover committed): listed first, then
        checked against the leases. Once another attempt holds the email (or it is
        settled), such a file is nobody's. A handed-over email (``sent``) keeps every
        pending file: settling it reads one."""
        files = await asyncio.to_thread(outbox.pending_files)
        if not files:
            return
        async with self.context.database.session() as session:
            found = await emails.email_leases_and_statuses(
                session, [email_id for email_id, _ in files]
            )
        for email_id, attempt in files:
            owner, status = found.get(email_id, (None, "gone"))
            if owner != attempt and status != "sent":
                outbox.discard(email_id, attempt)


def _books(directory: Path) -> list[str]:
    """The runners with a receipt book in ``directory``."""
    if not directory.is_dir():
        return []
    return [path.name.removesuffix(".receipts") for path in directory.glob("*.receipts")]
