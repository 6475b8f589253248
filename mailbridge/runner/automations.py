"""The automation worker: the queue of due runs, advanced in batches.

A claim is one transaction of the engine (:meth:`Engine.run_due`) that also advances
the runs it claims: ``SKIP LOCKED`` on PostgreSQL, under the write lock on SQLite, where
a backlog is worked through in a burst of batches (at most ``BURST`` seconds) before the
other writers of this process (dispatch, webhooks) take their turn. On stop it finishes
the batch in hand; nothing is held after.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Never

from mailbridge.engine.engine import Progress
from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits
from mailbridge.services.automations import sql_engine
from mailbridge.services.kernel import ServiceContext

BURST = 1.0  # seconds of batches in a row before the other writers get a turn


class AutomationWorker:
    name = "automations"

    def __init__(
        self,
        context: ServiceContext,
        *,
        batch: int = 500,
        poll: float = 0.25,
        write_lock: asyncio.Lock | None = None,
    ) -> None:
        self.engine = sql_engine(context)
        self._sqlite = context.database.is_sqlite
        self._write_lock = write_lock or asyncio.Lock()
        self.batch = batch
        self.poll = poll
        self.progress = Progress()
        self._loop: ClaimLoop[Never] = ClaimLoop(self, context.clock, Limits(batch, poll))

    def notify(self) -> None:
        self._loop.notify(due_now=True)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def open(self) -> None:
        pass

    async def next_due(self) -> datetime | None:
        return await self.engine.next_due()

    async def claim(self, limit: int) -> Batch[Never]:
        done = await self._advance(limit)
        self.progress += done
        return Batch(more=done.runs >= limit)

    async def process(self, item: Never) -> None:
        """Never called: the claim advanced its runs."""

    async def close(self) -> None:
        pass

    async def _advance(self, limit: int) -> Progress:
        if not self._sqlite:
            return await self.engine.run_due(limit)
        done = Progress()
        async with self._write_lock:
            started = time.monotonic()
            while True:
                batch = await self.engine.run_due(limit)
                done += batch
                if batch.runs < limit or self._loop.stopping:
                    return done
                if time.monotonic() - started > BURST:
                    return done
