"""What every service call needs: settings, the database and the clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mailbridge.clock import Clock, SystemClock
from mailbridge.config import Settings
from mailbridge.services.accounts import Principal
from mailbridge.services.cache import TTLCache
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
    principals: TTLCache[str, Principal] = field(default_factory=lambda: TTLCache(ttl=1.0))
    sending_domains: TTLCache[tuple[str, str], SendingDomain] = field(
        default_factory=lambda: TTLCache(ttl=2.0)
    )

    # Called when due work (emails, runs) was stored: a runner in this process wakes.
    wake_callbacks: list[Callable[..., None]] = field(default_factory=list)

    def work_added(self, *workers: str) -> None:
        """Wake the runner of this process: the ``workers`` named (``"delivery"``,
        ``"automations"``, ``"activity"``, ``"webhooks"``), or all of them."""
        for wake in self.wake_callbacks:
            wake(*workers)

    async def settle(self) -> None:
        """Stop the caches' background lookups (before the database is disposed)."""
        await self.principals.settle()
        await self.sending_domains.settle()

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None) -> ServiceContext:
        return cls(settings, Database.from_settings(settings), clock or SystemClock())
