"""The activity dispatcher: hands undispatched activity events to their consumers.

A loop over ``services.activity_dispatch.dispatch_batch``: while a batch comes back
full it goes on at once; otherwise it sleeps until :meth:`ActivityDispatcher.notify`
(this process stored events: ``Runner.notify``) or the poll interval (≤ 250 ms),
after which a read-only look at the partial index of undispatched events says
whether a claim is worth a write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from mailbridge.runner.backoff import Backoff
from mailbridge.services import webhooks
from mailbridge.services.context import ServiceContext
from mailbridge.services.webhooks import ActivityConsumer

logger = logging.getLogger(__name__)

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
        self._signal = asyncio.Event()
        self._notified = False
        self._backoff = Backoff(self.name)

    def notify(self) -> None:
        """This process stored events (``Runner.notify``): dispatch now, not at the next
        poll, and without a look first."""
        self._notified = True
        self._signal.set()

    async def run(self, stopping: asyncio.Event) -> None:
        watcher = asyncio.create_task(self._wake_on(stopping))
        try:
            while not stopping.is_set():
                # Cleared before looking, so a notify() that arrives while we look is kept.
                self._signal.clear()
                try:
                    notified, self._notified = self._notified, False
                    if (notified or await self._waiting()) and (
                        await self.dispatch_once() == self.batch_size
                    ):
                        continue
                except Exception as exc:
                    await self._backoff.failed(exc, "dispatching activity events", stopping)
                    continue
                self._backoff.succeeded()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_interval):
                        await self._signal.wait()
        finally:
            watcher.cancel()

    async def dispatch_once(self) -> int:
        writing = self.write_lock if self.context.database.is_sqlite else contextlib.nullcontext()
        async with writing:
            return await webhooks.dispatch_batch(self.context, self.consumers, self.batch_size)

    async def dispatch_all(self) -> int:
        """Dispatch until nothing waits (tests, operators); the number dispatched."""
        total = 0
        while count := await self.dispatch_once():
            total += count
        return total

    async def _waiting(self) -> bool:
        async with self.context.database.session() as session:
            return await webhooks.any_undispatched(session)

    async def _wake_on(self, stopping: asyncio.Event) -> None:
        await stopping.wait()
        self._signal.set()
