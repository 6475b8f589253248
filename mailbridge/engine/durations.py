"""Durations of delays and wait timeouts: "3 days", "2h 30m", "P1DT2H" or seconds.

Natural-language forms are read by pytimeparse2, ISO 8601 durations by isodate; a
bare number is seconds. At most 30 days (spec §8.1), at least one second.
"""

from __future__ import annotations

from datetime import timedelta

import isodate
from pytimeparse2 import parse as parse_natural

MAX_DURATION = timedelta(days=30)


class DurationError(ValueError):
    pass


def parse_duration(value: object) -> timedelta:
    """The duration ``value`` names, or :class:`DurationError` saying why not."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DurationError("a duration is a string such as '3 days' or a number of seconds")
    seconds: float | None
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip()
        seconds = _iso_seconds(text) if text[:1].upper() == "P" else _natural_seconds(text)
    if seconds is None:
        raise DurationError(f"{value!r} is not a duration we can read (try '3 days' or 'PT2H')")
    duration = timedelta(seconds=seconds)
    if duration < timedelta(seconds=1):
        raise DurationError("a duration is at least one second")
    if duration > MAX_DURATION:
        raise DurationError("a duration is at most 30 days")
    return duration


def _natural_seconds(text: str) -> float | None:
    parsed = parse_natural(text)
    return None if parsed is None else float(parsed)


def _iso_seconds(text: str) -> float | None:
    try:
        parsed = isodate.parse_duration(text.upper())
    except (isodate.ISO8601Error, ValueError):
        return None
    if isinstance(parsed, timedelta):
        return parsed.total_seconds()
    return None  # years and months have no fixed length
