"""The one place that reads the wall clock; everything else is handed a :class:`Clock`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that moves only when told to: for tests and embedding."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        self._now += delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        return self._now

    def set(self, instant: datetime) -> None:
        self._now = instant


def isoformat_ms(instant: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds, the API's timestamp format."""
    if instant is None:
        return None
    if instant.tzinfo is not UTC:
        instant = instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)
    text = instant.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
