"""One claim loop drives every queue of durable work (DESIGN §8).

A queue of due rows — emails to deliver, webhook deliveries to attempt, automation runs
to advance, campaigns to step, activity to dispatch — is the few methods of
:class:`Queue`; :class:`ClaimLoop` is the one loop that drives any of them, so a queue
adds methods, never a loop (procrastinate's ``Worker`` over its job manager is the
model). Each round of the loop:

1. **Room.** Items in flight (each :meth:`Queue.process` in a task of its own) stay
   under ``Limits.concurrency``; with others still in flight the loop claims only once
   ``Limits.refill`` slots are free — fewer, larger claim transactions.
2. **Look.** Unless it knows rows are due — told so (:meth:`ClaimLoop.notify` with
   ``due_now``), the last claim came back full, or the due time it saw last has
   passed — it asks :meth:`Queue.next_due`, a read-only look that spares an empty write.
3. **Claim.** :meth:`Queue.claim` leases up to the free slots (at most
   ``Limits.batch``) in one transaction and returns the :class:`Batch`: the items to
   process in flight, and whether more may be due at once (then the next round claims
   without sleeping and without looking; otherwise it looks once more, for the next
   due time). A queue whose rows are acted on in the claim's own transaction (runs
   advanced, activity dispatched, campaigns stepped) returns no items.
4. **Sleep** until a notify, an item finishing, stopping, the next due time the look
   saw (a short pause when rows are due yet were not claimed), or ``Limits.poll``
   seconds (DESIGN §3: at most 250 ms), whichever is first.

A round that raises backs off (:mod:`mailbridge.runner.backoff`). Stopping: no more
claims; items in flight get ``Limits.stop_grace`` seconds, the rest are cancelled; then
:meth:`Queue.close` writes what is pending and gives the leases back. The runner's
heartbeat is a tick of its own (``runner.default_ticks``), one row a runner, not a loop's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from mailbridge.clock import Clock
from mailbridge.runner.backoff import Backoff
from mailbridge.storage.database import Database

logger = logging.getLogger(__name__)
DUE_PAUSE = 0.05  # seconds: the pause when rows are due yet could not be claimed

Item = TypeVar("Item")


@dataclass(slots=True)
class Batch(Generic[Item]):
    """What one claim took."""

    items: Sequence[Item] = ()  # to process, each in flight; none when the claim acted
    more: bool = False  # more may be due now: claim again at once, without a look


@dataclass(frozen=True)
class Limits:
    batch: int  # the most rows one claim takes
    poll: float  # the longest sleep between two looks, in seconds
    concurrency: int = 0  # the most items in flight at once; 0: ``batch``
    refill: int = 1  # free slots worth a claim while other items are in flight
    stop_grace: float = 0.0  # seconds items in flight get to finish once stopping


class Queue(Protocol[Item]):
    """A queue of durable work, as :class:`ClaimLoop` drives it."""

    @property
    def name(self) -> str:
        """The worker's name (``Runner.notify`` wakes workers by it; log lines)."""
        ...

    async def open(self) -> None:
        """Before the first claim: resources the queue needs (a provider, a journal).
        Retried with back-off while it raises (the database out of reach at start)."""
        ...

    async def next_due(self) -> datetime | None:
        """When the earliest row falls due (past: due now), or None when none waits: a
        read-only look at the due index that says whether a claim is worth a write."""
        ...

    async def claim(self, limit: int) -> Batch[Item]:
        """Lease up to ``limit`` due rows to this worker in one transaction."""
        ...

    async def process(self, item: Item) -> None:
        """Act on one claimed item, in a task of its own, beside up to
        ``Limits.concurrency - 1`` others. It handles its own failures: the item's lease
        runs out and the row is claimed again (the loop logs what escapes)."""
        ...

    async def close(self) -> None:
        """After the items in flight finished or were cancelled: write what is pending,
        give back the leases still held, close what :meth:`open` made."""
        ...


class ClaimLoop(Generic[Item]):
    """Drives one :class:`Queue` until stopped; see the module docstring."""

    def __init__(self, queue: Queue[Item], clock: Clock, limits: Limits) -> None:
        self.queue = queue
        self.clock = clock
        self.limits = limits
        self.concurrency = limits.concurrency or limits.batch
        self.in_flight: set[asyncio.Task[None]] = set()
        self._signal = asyncio.Event()
        self._due_now = False
        self._stopping: asyncio.Event | None = None
        self._backoff = Backoff(queue.name)

    @property
    def stopping(self) -> bool:
        """Whether the loop was told to stop (a queue working through a burst asks)."""
        return self._stopping is not None and self._stopping.is_set()

    def notify(self, *, due_now: bool = False) -> None:
        """Something may be due: look now rather than at the next poll — or, with
        ``due_now`` (the caller stored rows due now), claim without looking first."""
        if due_now:
            self._due_now = True
        self._signal.set()

    async def run(self, stopping: asyncio.Event) -> None:
        self._stopping = stopping
        watcher = asyncio.create_task(self._wake_on(stopping))
        try:
            while not stopping.is_set():  # the database may be out of reach at start
                try:
                    await self.queue.open()
                    break
                except Exception as exc:
                    await self._backoff.failed(exc, "opening", stopping)
            await self._rounds(stopping)
        finally:
            watcher.cancel()
            await self._drain()
            await self.queue.close()

    async def _rounds(self, stopping: asyncio.Event) -> None:
        queue, clock, limits, in_flight = self.queue, self.clock, self.limits, self.in_flight
        concurrency = self.concurrency
        due: datetime | None = None  # what the last look saw, until a claim
        more = False  # the last claim came back full
        while not stopping.is_set():
            # Cleared before looking, so a notify() that arrives while we look is kept.
            self._signal.clear()
            free = concurrency - len(in_flight)
            try:
                if free >= limits.refill or (free > 0 and not in_flight):
                    claim = self._due_now or more
                    if not claim:
                        if due is None or due > clock.now():
                            due = await queue.next_due()
                        claim = due is not None and due <= clock.now()
                    if claim:
                        self._due_now = False
                        batch = await queue.claim(min(free, limits.batch))
                        if batch.items:
                            self._start(batch.items)
                        more = batch.more
                        if more:
                            self._backoff.succeeded()
                            continue
                        # What falls due next, so the sleep ends then (not a poll late).
                        due = await queue.next_due()
            except Exception as exc:
                await self._backoff.failed(exc, "taking due work", stopping)
                continue
            self._backoff.succeeded()
            await self._sleep(due)

    def _start(self, items: Sequence[Item]) -> None:
        process, in_flight, finished = self.queue.process, self.in_flight, self._finished
        for item in items:
            task = asyncio.create_task(process(item))
            in_flight.add(task)
            task.add_done_callback(finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self.in_flight.discard(task)
        self._signal.set()
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.error("%s: processing an item failed", self.queue.name, exc_info=exc)

    async def _sleep(self, due: datetime | None) -> None:
        timeout = self.limits.poll
        if due is not None:  # wake right when the next row falls due, not up to poll late
            until = (due - self.clock.now()).total_seconds()
            # Due already yet not claimed (no room, or another runner holds it): a short
            # pause, not a busy loop.
            timeout = min(timeout, until if until > 0 else DUE_PAUSE)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._signal.wait()

    async def _wake_on(self, stopping: asyncio.Event) -> None:
        await stopping.wait()
        self._signal.set()

    async def _drain(self) -> None:
        if not self.in_flight:
            return
        _done, late = await asyncio.wait(set(self.in_flight), timeout=self.limits.stop_grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.gather(*late, return_exceptions=True)


def new_owner() -> str:
    """A lease owner name unique to one worker: host, pid and a random part."""
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32]
    return f"{host}-{os.getpid()}-{secrets.token_hex(4)}"


def write_turn(
    database: Database, lock: asyncio.Lock
) -> contextlib.AbstractAsyncContextManager[object]:
    """On SQLite, ``lock``: the writers of one process take turns at it rather than meet
    in SQLite's busy handler, which sleeps. Elsewhere nothing (row locks suffice)."""
    return lock if database.is_sqlite else contextlib.nullcontext()
