"""A small time-bounded cache for hot, rarely changing lookups (callers, sending domains).

Entries live ``ttl`` seconds of monotonic time, so a change made by another process
(a revoked key, an unverified domain) is seen within ``ttl``; the process that makes a
change calls :meth:`clear` to see it at once. Expiry and the size bound are
``cachetools.TTLCache``'s (the least recently used entry goes when it is full).

:meth:`get_or_load` lets concurrent misses of one key share a single lookup: when an
entry expires under load, every request in flight misses it at the same instant, and
without sharing each would check out a database connection of its own (a burst that
overflows the pool and stalls all of them). It also refreshes ahead: an entry past half
its life is still answered, while one lookup in the background replaces it. Under load
the key and domain entries used to expire every second or two, and every request in
flight then waited for the shared lookup: the slowest percent of sends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, NamedTuple, TypeVar

import cachetools

K = TypeVar("K")
V = TypeVar("V")


class _Entry(NamedTuple, Generic[V]):
    refresh_after: float  # monotonic seconds
    value: V


def _now() -> float:
    return time.monotonic()  # looked up at each call: tests move the clock


class TTLCache(Generic[K, V]):
    def __init__(self, ttl: float, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self._entries: cachetools.TTLCache[K, _Entry[V]] = cachetools.TTLCache(
            max_entries, ttl, timer=_now
        )
        self._loading: dict[K, asyncio.Future[V]] = {}
        self._lookups: set[asyncio.Task[V]] = set()  # shared and background lookups
        self._generation = 0  # bumped by clear(): lookups begun before it are not kept
        self._settled = False

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry.value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = _Entry(_now() + self.ttl / 2, value)

    def discard(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()
        self._generation += 1

    async def settle(self) -> None:
        """Cancel the lookups still running and wait for them, and start no more in the
        background: before the database they read goes away (a process stopping, a test
        ending). A lookup left pending would hold its connection past the pool's end."""
        self._settled = True
        lookups = list(self._lookups)
        for task in lookups:
            task.cancel()
        await asyncio.gather(*lookups, return_exceptions=True)

    async def get_or_load(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """The cached value, or ``load()``'s, shared with the callers missing it meanwhile.

        A failed lookup is not shared: each waiting caller then runs its own, so every
        caller gets an error object of its own (callers add to their messages).
        """
        entry = self._entries.get(key)
        if entry is not None:
            if _now() >= entry.refresh_after and key not in self._loading and not self._settled:
                self._refresh(key, load)
            return entry.value
        loading = self._loading.get(key)
        if loading is not None:
            await asyncio.wait([loading])
            if not loading.cancelled() and loading.exception() is None:
                return loading.result()
            return await load()
        if self._settled:
            return await load()
        return await self._load(key, load)

    def _refresh(self, key: K, load: Callable[[], Awaitable[V]]) -> None:
        """Replace ``key``'s entry in the background; if the lookup fails (a key revoked
        meanwhile), the entry is dropped, so the next caller looks up for itself and gets
        the error."""
        task = self._load(key, load)
        task.add_done_callback(_seen)

    def _load(self, key: K, load: Callable[[], Awaitable[V]]) -> asyncio.Task[V]:
        """One lookup of ``key``, which callers missing it meanwhile wait for."""
        loading = asyncio.get_running_loop().create_future()
        self._loading[key] = loading
        generation = self._generation

        async def run() -> V:
            try:
                value = await load()
            except BaseException:
                self._entries.pop(key, None)
                loading.cancel()
                raise
            finally:
                del self._loading[key]
            if generation == self._generation:
                self.put(key, value)
            loading.set_result(value)
            return value

        task = asyncio.create_task(run())
        self._lookups.add(task)
        task.add_done_callback(self._lookups.discard)
        return task


def _seen(task: asyncio.Task[object]) -> None:
    if not task.cancelled():
        task.exception()  # seen: a failed refresh only drops the entry
