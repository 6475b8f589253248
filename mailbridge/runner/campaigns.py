"""The campaign worker: claims due campaigns and steps each through its fan-out.

Each step is one transaction (``services.campaigns``: start, occurrence, a chunk of
recipient rows, a chunk of emails, the A/B decision); a campaign whose next step is due
at once is stepped again while the worker holds its lease. On SQLite the steps take the
process's write lock in turns with the other writers, a burst at a time. Between claims
the worker sleeps until the next campaign falls due, a notify, or the poll interval.
On stop it finishes the step in hand and gives its leases back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from contextlib import suppress
from datetime import datetime, timedelta

from structlog.contextvars import bound_contextvars

from mailbridge.runner.backoff import Backoff
from mailbridge.runner.delivery import new_owner
from mailbridge.runner.sleeping import sleep_until_due
from mailbridge.services import campaigns
from mailbridge.services.context import ServiceContext

logger = logging.getLogger(__name__)

CLAIM = 8  # campaigns leased at once
BURST = 0.5  # seconds of steps under the SQLite write lock before the others get a turn


class CampaignWorker:
    name = "campaigns"

    def __init__(
        self,
        context: ServiceContext,
        *,
        poll: float | None = None,
        write_lock: asyncio.Lock | None = None,
        owner: str | None = None,
    ) -> None:
        self.context = context
        self.poll = poll or context.settings.runner_poll_interval
        self.owner = owner or new_owner()
        self.lease = timedelta(seconds=context.settings.campaign_lease_seconds)
        self._write_lock = write_lock or asyncio.Lock()
        self._wake = asyncio.Event()
        self._held: list[str] = []  # leased to this worker, next step due at once
        self.steps = 0
        self._backoff = Backoff(self.name)

    def notify(self) -> None:
        self._wake.set()

    def _writing(self) -> contextlib.AbstractAsyncContextManager[object]:
        return self._write_lock if self.context.database.is_sqlite else contextlib.nullcontext()

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            while not stopping.is_set():
                self._wake.clear()
                try:
                    busy = await self.step_due(stopping)
                except Exception as exc:
                    await self._backoff.failed(exc, "advancing campaigns", stopping)
                    continue
                self._backoff.succeeded()
                if not busy:
                    await self._sleep(stopping)
        finally:
            with suppress(Exception):
                async with self._writing(), self.context.database.session() as session:
                    await campaigns.release_campaigns(session, self.owner)

    async def step_due(self, stopping: asyncio.Event | None = None) -> bool:
        """Claim due campaigns and step those held for a while; True if it stepped any (a
        step may have made more due work: a child campaign, the next phase)."""
        async with self._writing(), self.context.database.session() as session:
            claimed = await campaigns.claim_due_campaigns(
                session, self.context.clock.now(), self.owner, CLAIM, self.lease
            )
        self._held.extend(campaign_id for campaign_id in claimed if campaign_id not in self._held)
        stepped = bool(self._held)
        started = time.monotonic()
        while self._held and not (stopping is not None and stopping.is_set()):
            for campaign_id in list(self._held):
                async with self._writing():
                    with bound_contextvars(campaign_id=campaign_id):
                        again = await campaigns.advance_campaign(
                            self.context, campaign_id, self.owner
                        )
                self.steps += 1
                if not again:  # its lease is given back with the step
                    self._held.remove(campaign_id)
            if time.monotonic() - started > BURST:
                break
        # Campaigns still held are stepped on the next round, without a sleep.
        return stepped

    async def run_all(self) -> int:
        """Step until nothing is due now (tests, operators); the number of steps."""
        before = self.steps
        while await self.step_due():
            pass
        return self.steps - before

    async def _sleep(self, stopping: asyncio.Event) -> None:
        await sleep_until_due(self._next_due, self.context.clock, self.poll, self._wake, stopping)

    async def _next_due(self) -> datetime | None:
        async with self.context.database.session() as session:
            return await campaigns.next_campaign_due_at(session)
