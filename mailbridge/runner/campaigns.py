"""The campaign worker: the queue of due campaigns, each stepped through its fan-out.

Each step is one transaction (``services.campaigns``: start, occurrence, a chunk of
recipient rows, a chunk of emails, the A/B decision); a campaign whose next step is due
at once is stepped again while the worker holds its lease — the claim says more is due,
so the loop claims again without sleeping. On SQLite the steps take the process's write
lock in turns with the other writers, a burst at a time. On stop it finishes the step
in hand and gives its leases back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime, timedelta
from typing import Never

from structlog.contextvars import bound_contextvars

from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, new_owner, write_turn
from mailbridge.services import campaigns
from mailbridge.services.kernel import ServiceContext

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
        self._held: list[str] = []  # leased to this worker, next step due at once
        self.steps = 0
        self._loop: ClaimLoop[Never] = ClaimLoop(self, context.clock, Limits(CLAIM, self.poll))

    def notify(self) -> None:
        self._loop.notify(due_now=True)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    def _writing(self) -> contextlib.AbstractAsyncContextManager[object]:
        return write_turn(self.context.database, self._write_lock)

    async def run_all(self) -> int:
        """Step until nothing is due now (tests, operators); the number of steps."""
        before = self.steps
        while (await self.claim(CLAIM)).more:
            pass
        return self.steps - before

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def open(self) -> None:
        pass

    async def next_due(self) -> datetime | None:
        async with self.context.database.session() as session:
            return await campaigns.next_campaign_due_at(session)

    async def claim(self, limit: int) -> Batch[Never]:
        """Claim due campaigns and step those held for a while; more is due when it
        stepped any (a step may have made more due work: a child campaign, the next
        phase; campaigns still held are stepped on the next round)."""
        async with self._writing(), self.context.database.session() as session:
            claimed = await campaigns.claim_due_campaigns(
                session, self.context.clock.now(), self.owner, limit, self.lease
            )
        self._held.extend(campaign_id for campaign_id in claimed if campaign_id not in self._held)
        stepped = bool(self._held)
        started = time.monotonic()
        while self._held and not self._loop.stopping:
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
        return Batch(more=stepped)

    async def process(self, item: Never) -> None:
        """Never called: the claim stepped its campaigns."""

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            async with self._writing(), self.context.database.session() as session:
                await campaigns.release_campaigns(session, self.owner)
