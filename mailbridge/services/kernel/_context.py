"""What every service call needs: settings, the database and the clock — and the
process's hot caches, which a context keeps here under a name of its own (accounts
keeps who a token is: ``accounts.principal_cache``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mailbridge.clock import Clock, SystemClock
from mailbridge.config import Settings
from mailbridge.services.kernel._cache import TTLCache
from mailbridge.storage.database import Database


@dataclass(frozen=True)
class SendingDomain:
    """A domain that may send, as the send path needs it."""

    id: str
    name: str


@dataclass
class ServiceContext:
    settings: Settings
    database: Database
    clock: Clock = field(default_factory=SystemClock)
    # Hot lookups of the send path; a change elsewhere is seen within the TTL.
    sending_domains: TTLCache[tuple[str, str], SendingDomain] = field(
        default_factory=lambda: TTLCache(ttl=2.0)
    )

    # The contexts' own caches, by name (:meth:`cache`).
    caches: dict[str, TTLCache[Any, Any]] = field(default_factory=dict)

    # Called when due work (emails, runs) was stored: a runner in this process wakes.
    wake_callbacks: list[Callable[..., None]] = field(default_factory=list)

    def work_added(self, *workers: str) -> None:
        """Wake the runner of this process: the ``workers`` named (``"delivery"``,
        ``"automations"``, ``"activity"``, ``"webhooks"``), or all of them."""
        for wake in self.wake_callbacks:
            wake(*workers)

    def cache(self, name: str, ttl: float) -> TTLCache[Any, Any]:
        """The cache a context keeps under ``name``, made on first use."""
        found = self.caches.get(name)
        if found is None:
            found = self.caches[name] = TTLCache(ttl=ttl)
        return found

    async def settle(self) -> None:
        """Stop the caches' background lookups (before the database is disposed)."""
        await self.sending_domains.settle()
        for cache in self.caches.values():
            await cache.settle()

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None) -> ServiceContext:
        return cls(settings, Database.from_settings(settings), clock or SystemClock())
