"""A small time-bounded cache for hot, rarely changing lookups (callers, sending domains).

Entries live ``ttl`` seconds of monotonic time, so a change made by another process
(a revoked key, an unverified domain) is seen within ``ttl``; the process that makes a
change calls :meth:`clear` to see it at once.

:meth:`get_or_load` lets concurrent misses of one key share a single lookup: when an
entry expires under load, every request in flight misses it at the same instant, and
without sharing each would check out a database connection of its own (a burst that
overflows the pool and stalls all of them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    def __init__(self, ttl: float, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[K, tuple[float, V]] = {}
        self._loading: dict[K, asyncio.Future[V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            self._entries.pop(key, None)
            return None
        return entry[1]

    def put(self, key: K, value: V) -> None:
        if len(self._entries) >= self.max_entries:
            self._entries.clear()  # crude, but bounded: a cache, not a store
        self._entries[key] = (time.monotonic() + self.ttl, value)

    def discard(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    async def get_or_load(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """The cached value, or ``load()``'s, shared with the callers missing it meanwhile.

        A failed lookup is not shared: each waiting caller then runs its own, so every
        caller gets an error object of its own (callers add to their messages).
        """
        value = self.get(key)
        if value is not None:
            return value
        loading = self._loading.get(key)
        if loading is not None:
            await asyncio.wait([loading])
            if not loading.cancelled() and loading.exception() is None:
                return loading.result()
            return await load()
        loading = asyncio.get_running_loop().create_future()
        self._loading[key] = loading
        try:
            value = await load()
        except BaseException:
            loading.cancel()
            raise
        finally:
            del self._loading[key]
        self.put(key, value)
        loading.set_result(value)
        return value
