"""A small time-bounded cache for hot, rarely changing lookups (callers, sending domains).

Entries live ``ttl`` seconds of monotonic time, so a change made by another process
(a revoked key, an unverified domain) is seen within ``ttl``; the process that makes a
change calls :meth:`clear` to see it at once.
"""

from __future__ import annotations

import time
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    def __init__(self, ttl: float, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[K, tuple[float, V]] = {}

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

    def clear(self) -> None:
        self._entries.clear()
