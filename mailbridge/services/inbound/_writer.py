"""Received messages stored a group at a time: one commit for the messages of many SMTP
conversations, so the listener is not capped at one commit per message.

Each conversation hands its prepared message over and waits; the writer stores
everything that arrived since its last commit in one transaction and answers them all
(the listener says 250 only then). If the group's transaction fails — a team went over
its quota, a row would not go in — each message is stored again in a transaction of its
own, so only the culprit hears of it. On SQLite the group is the one writer at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from mailbridge.services.context import ServiceContext
from mailbridge.services.inbound._receiving import Received, Route, store

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class _Job:
    mail_from: str
    routes: Sequence[Route]
    received: Received
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

    async def store(self, mail_from: str, routes: Sequence[Route], received: Received) -> list[str]:
        """Store a prepared message (committed when this returns); its row ids."""
        job = _Job(mail_from, routes, received)
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
        async with self.context.database.session() as session:
            results = [
                await store(session, self.context, job.mail_from, job.routes, job.received)
                for job in group
            ]
            await session.commit()
        self.commits += 1
        return results
