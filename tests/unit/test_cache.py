"""The TTL cache's storage: expiry and the size bound are cachetools', the refresh-ahead
and shared lookups (tests/unit/test_send_path.py) sit on top of them."""

from __future__ import annotations

import asyncio

import pytest

from mailbridge.services.kernel import TTLCache


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    clock = [100.0]
    monkeypatch.setattr("mailbridge.services.kernel._cache.time.monotonic", lambda: clock[0])
    return clock


def test_an_entry_lives_ttl_seconds(now: list[float]) -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=2.0)
    cache.put("k", 1)
    now[0] += 1.99
    assert cache.get("k") == 1
    now[0] += 0.01
    assert cache.get("k") is None
    cache.put("k", 2)  # a new entry, a new life
    now[0] += 1.5
    assert cache.get("k") == 2
    cache.discard("k")
    assert cache.get("k") is None
    cache.discard("never there")
    assert cache.get("never there") is None


def test_a_full_cache_drops_its_least_recently_used_entry(now: list[float]) -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=60, max_entries=3)
    for number, key in enumerate("abc"):
        cache.put(key, number)
    assert cache.get("a") == 0  # "b" is now the least recently used
    cache.put("d", 3)
    assert [cache.get(key) for key in "abcd"] == [0, None, 2, 3]


def test_a_full_cache_drops_expired_entries_first(now: list[float]) -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=10, max_entries=2)
    cache.put("old", 1)
    now[0] += 6
    cache.put("young", 2)
    assert cache.get("old") == 1  # recently used, but it expires first
    now[0] += 5
    cache.put("new", 3)
    assert [cache.get(key) for key in ("old", "young", "new")] == [None, 2, 3]


async def test_an_expired_entry_is_looked_up_again(now: list[float]) -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=1.0)
    loads: list[int] = []

    async def load() -> int:
        loads.append(len(loads) + 1)
        return loads[-1]

    assert await cache.get_or_load("k", load) == 1
    now[0] += 1.0
    assert await cache.get_or_load("k", load) == 2
    await asyncio.sleep(0)
    assert loads == [1, 2] and cache.get("k") == 2
