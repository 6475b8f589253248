"""engine.durations.parse_duration: natural language, ISO 8601 or seconds; 1 s to 30 days."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailbridge.engine.durations import MAX_DURATION, DurationError, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3 days", timedelta(days=3)),
        ("3 Days", timedelta(days=3)),
        ("  3 days ", timedelta(days=3)),
        ("1 day", timedelta(days=1)),
        ("2h 30m", timedelta(hours=2, minutes=30)),
        ("2 hours 30 minutes", timedelta(hours=2, minutes=30)),
        ("45 minutes", timedelta(minutes=45)),
        ("1w", timedelta(weeks=1)),
        ("2 weeks", timedelta(weeks=2)),
        ("90", timedelta(seconds=90)),
        ("1.5", timedelta(seconds=1.5)),
        ("30 days", timedelta(days=30)),
        ("P1DT2H", timedelta(days=1, hours=2)),
        ("PT90M", timedelta(minutes=90)),
        ("P2W", timedelta(weeks=2)),
        ("p1d", timedelta(days=1)),
        ("P30D", timedelta(days=30)),
        ("PT1S", timedelta(seconds=1)),
        (1, timedelta(seconds=1)),
        (3600, timedelta(hours=1)),
        (1.5, timedelta(seconds=1.5)),
        (30 * 86400, MAX_DURATION),
    ],
)
def test_readable_durations(text: str | int | float, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("31 days", "at most 30 days"),
        ("30 days 1 second", "at most 30 days"),
        ("5 weeks", "at most 30 days"),
        ("P31D", "at most 30 days"),
        ("P1Y", "is not a duration we can read"),  # years and months have no fixed length
        ("P1M", "is not a duration we can read"),
        ("P99999999999D", "is not a duration we can read"),
        (30 * 86400 + 1, "at most 30 days"),
        (1e300, "at most 30 days"),
        (float("inf"), "at most 30 days"),
        (float("nan"), "is not a duration we can read"),
        (0, "at least one second"),
        (0.5, "at least one second"),
        (-5, "at least one second"),
        (float("-inf"), "at least one second"),
        ("-5 seconds", "at least one second"),
        ("PT0.5S", "at least one second"),
        ("PT", "at least one second"),
        ("", "is not a duration we can read"),
        ("soon", "is not a duration we can read"),
        ("three days", "is not a duration we can read"),
        ("P", "is not a duration we can read"),
        ("PXD", "is not a duration we can read"),
        (None, "a duration is a string"),
        (True, "a duration is a string"),
        ([3], "a duration is a string"),
        ({"days": 3}, "a duration is a string"),
    ],
)
def test_unreadable_or_out_of_range_durations(value: object, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        parse_duration(value)


def test_a_duration_error_is_a_value_error() -> None:
    # pydantic validators turn ValueErrors into validation problems, never a crash
    assert issubclass(DurationError, ValueError)
