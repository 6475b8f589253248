"""What every service call needs: settings, the database and the clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from mailbridge.clock import Clock, SystemClock
from mailbridge.config import Settings
from mailbridge.storage.database import Database


@dataclass
class ServiceContext:
    settings: Settings
    database: Database
    clock: Clock = field(default_factory=SystemClock)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None) -> ServiceContext:
        return cls(settings, Database.from_settings(settings), clock or SystemClock())
