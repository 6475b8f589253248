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

from mailbridge.engine.engine import Progress
from mailbridge.runner.backoff import Backoff
from mailbridge.runner.sleeping import sleep_until_due
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
        self._backoff = Backoff(self.name)

    def notify(self) -> None:
        self._wake.set()

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            self._wake.clear()
            try:
                done = await self._advance(stopping)
            except Exception as exc:
                await self._backoff.failed(exc, "advancing automation runs", stopping)
                continue
            self._backoff.succeeded()
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
        await sleep_until_due(
            self.engine.next_due, self.engine.clock, self.poll, self._wake, stopping
        )
