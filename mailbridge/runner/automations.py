"""The automation worker: advances due runs in batches, wakes at once on new work.

Each batch is one transaction of the engine (:meth:`Engine.run_due`): claimed with
``SKIP LOCKED`` on PostgreSQL, under the write lock on SQLite. Between batches it
sleeps at most ``poll`` seconds (DESIGN §3: ≤ 250 ms), less when its own process
stored due work. On stop it finishes the batch in hand; nothing is held after.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import suppress

from mailbridge.engine.engine import Progress
from mailbridge.services.automations import sql_engine
from mailbridge.services.context import ServiceContext

logger = logging.getLogger(__name__)

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
        self._wake = asyncio.Event()
        self.progress = Progress()

    def notify(self) -> None:
        self._wake.set()

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            self._wake.clear()
            try:
                done = await self._advance(stopping)
            except Exception:
                logger.exception("advancing automation runs failed; retrying shortly")
                done = Progress()
            self.progress += done
            if done.runs >= self.batch:
                continue  # more is due: no sleep
            await self._sleep(stopping)

    async def _advance(self, stopping: asyncio.Event) -> Progress:
        """One batch, or on SQLite a burst of batches while a backlog lasts (at most
        ``BURST`` seconds): runs falling due together are woken before the other writers
        of this process (dispatch, webhooks) take their turn at the write lock."""
        if not self._sqlite:
            return await self.engine.run_due(self.batch)
        done = Progress()
        async with self._write_lock:
            started = time.monotonic()
            while True:
                batch = await self.engine.run_due(self.batch)
                done += batch
                if batch.runs < self.batch or stopping.is_set():
                    return done
                if time.monotonic() - started > BURST:
                    return done

    async def _sleep(self, stopping: asyncio.Event) -> None:
        timeout = self.poll
        with suppress(Exception):  # a failed look only means the full poll interval
            due = await self.engine.next_due()
            if due is not None:  # wake right when the next run falls due, not up to poll late
                until = (due - self.engine.clock.now()).total_seconds()
                # Due already yet nothing was claimable (another runner holds it): a short
                # pause, not a busy loop.
                timeout = min(timeout, until if until > 0 else 0.05)
        waits = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(stopping.wait())]
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
                with suppress(asyncio.CancelledError):
                    await waiter
