"""The one claim loop (``runner.claim_loop``) over an in-memory queue: claims, looks,
wakes, back-off, bounded concurrency, drain on stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from mailbridge.clock import FakeClock, SystemClock
from mailbridge.runner.claim_loop import Batch, ClaimLoop, Limits, write_turn


class MemoryQueue:
    """Due items in memory; records what the loop asked of it."""

    name = "memory"

    def __init__(self, clock: SystemClock | FakeClock) -> None:
        self.clock = clock
        self.due: list[tuple[datetime, int]] = []  # (due at, item)
        self.looks = 0
        self.claims: list[int] = []  # the limit of each claim
        self.looks_before: list[int] = []  # the looks made before each claim
        self.processed: list[int] = []
        self.in_process = 0
        self.most_in_process = 0
        self.release: asyncio.Event | None = None  # process() waits for it when set
        self.fail_claims = 0  # claims that raise first
        self.fail_opens = 0
        self.opened = False
        self.closed_after: list[int] | None = None  # what was processed when closed

    def add(self, *items: int, at: datetime | None = None) -> None:
        self.due += [(at or self.clock.now(), item) for item in items]

    async def open(self) -> None:
        if self.fail_opens:
            self.fail_opens -= 1
            raise RuntimeError("not yet")
        self.opened = True

    async def next_due(self) -> datetime | None:
        self.looks += 1
        return min((at for at, _ in self.due), default=None)

    async def claim(self, limit: int) -> Batch[int]:
        self.claims.append(limit)
        self.looks_before.append(self.looks)
        if self.fail_claims:
            self.fail_claims -= 1
            raise RuntimeError("claim failed")
        now = self.clock.now()
        taken = sorted(entry for entry in self.due if entry[0] <= now)[:limit]
        for entry in taken:
            self.due.remove(entry)
        return Batch([item for _, item in taken], more=len(taken) == limit)

    async def process(self, item: int) -> None:
        self.in_process += 1
        self.most_in_process = max(self.most_in_process, self.in_process)
        try:
            if self.release is not None:
                await self.release.wait()
            self.processed.append(item)
        finally:
            self.in_process -= 1

    async def close(self) -> None:
        self.closed_after = list(self.processed)


async def until(condition: Callable[[], bool], limit: float = 30.0) -> None:
    """Wait on state, not on time: ``condition`` true, within a generous limit."""
    async with asyncio.timeout(limit):
        while not condition():
            await asyncio.sleep(0.005)


class Running:
    def __init__(self, loop: ClaimLoop[int]) -> None:
        self.loop = loop
        self.stopping = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Running:
        self.task = asyncio.create_task(self.loop.run(self.stopping))
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        self.stopping.set()
        assert self.task is not None
        await self.task


def loop_over(
    queue: MemoryQueue,
    *,
    poll: float = 60.0,
    batch: int = 10,
    concurrency: int = 0,
    refill: int = 1,
    stop_grace: float = 0.0,
) -> ClaimLoop[int]:
    limits = Limits(batch, poll, concurrency, refill, stop_grace)
    return ClaimLoop(queue, queue.clock, limits)


async def test_due_items_are_claimed_processed_and_the_queue_closed_on_stop() -> None:
    queue = MemoryQueue(SystemClock())
    queue.add(1, 2, 3)
    async with Running(loop_over(queue)) as running:
        await until(lambda: sorted(queue.processed) == [1, 2, 3])
        assert queue.opened and queue.claims == [10]
    assert running.task is not None and running.task.done()
    assert sorted(queue.closed_after or []) == [1, 2, 3]


async def test_nothing_due_means_a_look_and_no_claim() -> None:
    queue = MemoryQueue(SystemClock())
    async with Running(loop_over(queue, poll=0.01)):
        await until(lambda: queue.looks >= 3)
    assert queue.claims == []


async def test_notify_due_now_claims_at_once_without_a_look() -> None:
    queue = MemoryQueue(SystemClock())
    loop = loop_over(queue)  # asleep for a minute after its first look
    async with Running(loop):
        await until(lambda: queue.looks == 1)
        queue.add(7)
        loop.notify(due_now=True)
        await until(lambda: queue.processed == [7])
    assert queue.looks_before == [1]


async def test_notify_wakes_a_look_that_finds_new_work() -> None:
    queue = MemoryQueue(SystemClock())
    loop = loop_over(queue)
    async with Running(loop):
        await until(lambda: queue.looks == 1)
        queue.add(8)
        loop.notify()
        await until(lambda: queue.processed == [8])
    assert queue.looks_before == [2]


async def test_it_wakes_when_the_next_item_falls_due_and_claims_without_looking_again() -> None:
    clock = SystemClock()
    queue = MemoryQueue(clock)
    queue.add(5, at=clock.now() + timedelta(milliseconds=50))
    async with Running(loop_over(queue)):  # a minute's poll: only the due time wakes it
        await until(lambda: queue.processed == [5])
    assert queue.looks_before == [1]


async def test_after_a_claim_it_looks_and_wakes_when_the_next_item_falls_due() -> None:
    clock = SystemClock()
    queue = MemoryQueue(clock)
    queue.release = asyncio.Event()  # nothing finishes, so nothing but the due time wakes it
    queue.add(1)
    # Due after the first claim even on a busy machine, so that it takes a claim of its own.
    queue.add(2, at=clock.now() + timedelta(milliseconds=500))
    async with Running(loop_over(queue)):  # a minute's poll
        await until(lambda: len(queue.claims) == 2 and queue.in_process == 2)
        queue.release.set()
        await until(lambda: sorted(queue.processed) == [1, 2])
    # One look before the first claim, one right after it (the second item's due time).
    assert queue.looks_before == [1, 2]


async def test_a_full_batch_is_followed_by_another_claim_without_a_look() -> None:
    queue = MemoryQueue(SystemClock())
    queue.add(*range(25))
    async with Running(loop_over(queue, batch=10, concurrency=100)):
        await until(lambda: len(queue.processed) == 25)
    # One look before the first claim; the next ones followed full batches.
    assert queue.claims[:3] == [10, 10, 10] and queue.looks_before[:3] == [1, 1, 1]


async def test_items_in_flight_stay_under_the_concurrency_and_refill_in_groups() -> None:
    queue = MemoryQueue(SystemClock())
    queue.release = asyncio.Event()
    queue.add(*range(12))
    async with Running(loop_over(queue, batch=10, concurrency=4, refill=2)):
        await until(lambda: queue.in_process == 4)
        assert queue.claims == [4]
        queue.release.set()
        await until(lambda: len(queue.processed) == 12)
    assert queue.most_in_process == 4
    assert all(limit >= 2 for limit in queue.claims)


async def test_a_failed_claim_backs_off_and_is_retried() -> None:
    queue = MemoryQueue(SystemClock())
    queue.fail_claims = 2
    queue.add(3)
    loop = loop_over(queue)
    async with Running(loop):
        await until(lambda: queue.processed == [3])
    assert len(queue.claims) == 3


async def test_opening_is_retried_until_it_succeeds() -> None:
    queue = MemoryQueue(SystemClock())
    queue.fail_opens = 2
    queue.add(4)
    async with Running(loop_over(queue)):
        await until(lambda: queue.processed == [4])
    assert queue.opened


async def test_stopping_drains_what_finishes_in_the_grace_and_cancels_the_rest() -> None:
    queue = MemoryQueue(SystemClock())
    queue.release = asyncio.Event()
    queue.add(1, 2)
    loop = loop_over(queue, stop_grace=0.05)
    running = Running(loop)
    await running.__aenter__()
    await until(lambda: queue.in_process == 2)
    await running.stop()  # never released: both cancelled after the grace
    assert queue.processed == [] and queue.in_process == 0
    assert queue.closed_after == [] and not loop.in_flight


async def test_stopping_waits_for_items_that_finish_within_the_grace() -> None:
    queue = MemoryQueue(SystemClock())
    release = queue.release = asyncio.Event()
    queue.add(1)
    loop = loop_over(queue, stop_grace=30.0)
    running = Running(loop)
    await running.__aenter__()
    await until(lambda: queue.in_process == 1)
    stopped = asyncio.create_task(running.stop())
    await until(lambda: loop.stopping)
    assert not stopped.done()
    release.set()
    await stopped
    assert queue.closed_after == [1]


async def test_a_fake_clock_due_time_is_compared_on_that_clock() -> None:
    clock = FakeClock()
    queue = MemoryQueue(clock)
    queue.add(9, at=clock.now() + timedelta(hours=1))
    loop = loop_over(queue, poll=0.01)
    async with Running(loop):
        await until(lambda: queue.looks >= 2)
        assert queue.claims == []
        clock.advance(timedelta(hours=1))
        await until(lambda: queue.processed == [9])


async def test_write_turn_is_the_lock_on_sqlite_and_nothing_elsewhere() -> None:
    lock = asyncio.Lock()

    class Sqlite:
        is_sqlite = True

    class Postgres:
        is_sqlite = False

    async with write_turn(Sqlite(), lock):  # type: ignore[arg-type]
        assert lock.locked()
    async with write_turn(Postgres(), lock):  # type: ignore[arg-type]
        assert not lock.locked()
