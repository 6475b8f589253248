"""The activity dispatcher: the queue of undispatched activity events.

A claim is ``services.webhooks.dispatch_batch``: one transaction takes a batch of
events and hands it to their consumers. While batches come back full it goes on at
once; otherwise the loop's look is a read-only one at the partial index of
undispatched events, unless :meth:`ActivityDispatcher.notify` (this process stored
events: ``Runner.notify``) says to dispatch without looking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Never

from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, write_turn
from mailbridge.services import webhooks
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks import ActivityConsumer

BATCH_SIZE = 500


class ActivityDispatcher:
    name = "activity"

    def __init__(
        self,
        context: ServiceContext,
        consumers: Sequence[ActivityConsumer],
        *,
        batch_size: int = BATCH_SIZE,
        poll_interval: float | None = None,
        write_lock: asyncio.Lock | None = None,
    ) -> None:
        self.context = context
        self.consumers = list(consumers)
        self.batch_size = batch_size
        self.poll_interval = poll_interval or context.settings.runner_poll_interval
        # SQLite: a lock shared with the other writers of this process (the webhook
        # worker), so that they take turns rather than sleep in SQLite's busy handler.
        self.write_lock = write_lock or asyncio.Lock()
        self._loop: ClaimLoop[Never] = ClaimLoop(
            self, context.clock, Limits(batch_size, self.poll_interval)
        )

    def notify(self) -> None:
        """This process stored events (``Runner.notify``): dispatch now, not at the next
        poll, and without a look first."""
        self._loop.notify(due_now=True)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    async def dispatch_once(self) -> int:
        async with write_turn(self.context.database, self.write_lock):
            return await webhooks.dispatch_batch(self.context, self.consumers, self.batch_size)

    async def dispatch_all(self) -> int:
        """Dispatch until nothing waits (tests, operators); the number dispatched."""
        total = 0
        while count := await self.dispatch_once():
            total += count
        return total

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def open(self) -> None:
        pass

    async def next_due(self) -> datetime | None:
        async with self.context.database.session() as session:
            waiting = await webhooks.any_undispatched(session)
        return self.context.clock.now() if waiting else None

    async def claim(self, limit: int) -> Batch[Never]:
        return Batch(more=await self.dispatch_once() == limit)

    async def process(self, item: Never) -> None:
        """Never called: the claim dispatched its events."""

    async def close(self) -> None:
        pass
