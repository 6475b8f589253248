"""Durations of delays and wait timeouts: "3 days", "2h 30m", "P1DT2H" or seconds.

Natural-language forms are read by pytimeparse2, ISO 8601 durations by isodate; a
bare number is seconds. At most 30 days (spec §8.1), at least one second.
"""

from __future__ import annotations

import math
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
    if seconds is None or math.isnan(seconds):
        raise DurationError(f"{value!r} is not a duration we can read (try '3 days' or 'PT2H')")
    # compared as numbers first: timedelta overflows on huge or infinite values
    if seconds < 1:
        raise DurationError("a duration is at least one second")
    if seconds > MAX_DURATION.total_seconds():
        raise DurationError("a duration is at most 30 days")
    return timedelta(seconds=seconds)


def _natural_seconds(text: str) -> float | None:
    parsed = parse_natural(text)
    return None if parsed is None else float(parsed)


def _iso_seconds(text: str) -> float | None:
    try:
        parsed = isodate.parse_duration(text.upper())
    except (isodate.ISO8601Error, ValueError, OverflowError):
        return None
    if isinstance(parsed, timedelta):
        return parsed.total_seconds()
    return None  # years and months have no fixed length
