"""The contact import worker: the queue of CSV imports not done yet.

A claim is ``services.audiences.advance_imports``: one transaction writes the next chunk
of the oldest import, so a claim acts itself and returns no items. While it wrote one
the loop claims again at once; otherwise it looks (read only) for an import still to
write. ``notify`` (an import was uploaded by this process) skips the look.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Never

from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, write_turn
from mailbridge.services import audiences
from mailbridge.services.kernel import ServiceContext


class ImportWorker:
    name = "imports"

    def __init__(
        self,
        context: ServiceContext,
        *,
        poll_interval: float | None = None,
        write_lock: asyncio.Lock | None = None,
    ) -> None:
        self.context = context
        self.poll_interval = poll_interval or context.settings.runner_poll_interval
        self.write_lock = write_lock or asyncio.Lock()
        self.chunks = 0
        self._loop: ClaimLoop[Never] = ClaimLoop(self, context.clock, Limits(1, self.poll_interval))

    def notify(self) -> None:
        self._loop.notify(due_now=True)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._loop.run(stopping)

    async def write_all(self) -> int:
        """Write chunks until no import waits (tests, operators); the number written."""
        before = self.chunks
        while (await self.claim(1)).more:
            pass
        return self.chunks - before

    # --- the queue (claim_loop.Queue) -------------------------------------------------

    async def open(self) -> None:
        pass

    async def next_due(self) -> datetime | None:
        async with self.context.database.session() as session:
            waiting = await audiences.any_import_due(session)
        return self.context.clock.now() if waiting else None

    async def claim(self, limit: int) -> Batch[Never]:
        async with write_turn(self.context.database, self.write_lock):
            wrote = await audiences.advance_imports(self.context)
        self.chunks += wrote
        return Batch(more=wrote)

    async def process(self, item: Never) -> None:
        """Never called: the claim wrote its chunk."""

    async def close(self) -> None:
        pass
