"""Received messages stored a group at a time: one commit for the messages of many SMTP
conversations, so the listener is not capped at one commit per message.

Each conversation hands its prepared message over and waits; the writer stores the
raw blobs of everything that arrived since its last commit (synced, many at once),
stores their rows in one transaction and answers them all (the listener says 250 only
then). If the group's transaction fails — a team went over
its quota, a row would not go in — each message is stored again in a transaction of its
own, so only the culprit hears of it. On SQLite the group is the one writer at a time,
and a group of plain mail goes through the database's inline writer (``_storing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from mailbridge.services.inbound._blobs import StagedBlob, cache_blobs, settle_blobs
from mailbridge.services.inbound._receiving import Received
from mailbridge.services.inbound._routing import Route
from mailbridge.services.inbound._storing import Arrival, store, store_inline
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.operations import inbound_unmatched_report

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class _Job:
    arrival: Arrival
    done: asyncio.Future[list[str]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class InboundWriter:
    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.commits = 0
        self._pending: list[_Job] = []
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._caching: set[asyncio.Task[None]] = set()

    async def store(self, mail_from: str, routes: Sequence[Route], received: Received) -> list[str]:
        """Store a prepared message (committed when this returns); its row ids."""
        job = _Job(Arrival(mail_from, routes, received))
        self._pending.append(job)
        self._arrived.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="inbound-writer")
        return await asyncio.shield(job.done)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await self._arrived.wait()
            self._arrived.clear()
            group, self._pending = self._pending, []
            if group:
                await self._write(group)

    async def _write(self, group: list[_Job]) -> None:
        try:
            results = await self._transaction(group)
        except Exception as exc:
            if len(group) > 1:  # one of them spoiled it: each on its own, so only it fails
                for job in group:
                    await self._write([job])
            elif not group[0].done.done():
                group[0].done.set_exception(exc)
            return
        for job, ids in zip(group, results, strict=True):
            if not job.done.done():
                job.done.set_result(ids)

    async def _transaction(self, group: list[_Job]) -> list[list[str]]:
        arrivals = [job.arrival for job in group]
        # The bytes first, synced, for the whole group; then the rows.
        root = self.context.settings.data_dir
        await asyncio.to_thread(settle_blobs, root, [a.received.raw for a in arrivals])
        writer = self.context.database.sqlite_writer
        if writer is not None and all(arrival.plain for arrival in arrivals):
            now = self.context.clock.now()
            results = await writer.transaction(
                lambda connection: store_inline(writer, connection, now, arrivals)
            )
        else:
            async with self.context.database.session() as session:
                stored = await store(session, self.context, arrivals)
            results = stored.ids
            for reason in stored.unmatched:
                inbound_unmatched_report(reason)
        self.commits += 1
        self._cache_attachments([blob for a in arrivals for blob in a.received.attachments])
        return results

    def _cache_attachments(self, blobs: list[StagedBlob]) -> None:
        """Each attachment's own blob, after the 250s (a cache of bytes in the raw blobs)."""
        if not blobs:
            return
        task = asyncio.create_task(
            asyncio.to_thread(cache_blobs, self.context.settings.data_dir, blobs)
        )
        self._caching.add(task)
        task.add_done_callback(self._cached)

    def _cached(self, task: asyncio.Task[None]) -> None:
        self._caching.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("caching attachments failed: %s", task.exception())
