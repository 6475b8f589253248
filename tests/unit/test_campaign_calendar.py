"""services.campaigns._calendar: zones, send times, RRULEs across DST, daily batches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mailbridge.errors import ValidationError
from mailbridge.services.campaigns._calendar import (
    MAX_RULE_LENGTH,
    Recurrence,
    batch_due,
    day_start,
    parse_campaign_time,
    timezone_named,
    validate_recurrence,
)

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
SANTIAGO = ZoneInfo("America/Santiago")


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(
    zone: ZoneInfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0
) -> datetime:
    """The UTC instant of a wall time in ``zone`` (fold=0)."""
    return datetime(year, month, day, hour, minute, tzinfo=zone).astimezone(UTC)


def walk(recurrence: Recurrence, after: datetime, n: int) -> list[datetime]:
    out: list[datetime] = []
    for _ in range(n):
        nxt = recurrence.next_after(after)
        assert nxt is not None
        assert nxt.tzinfo is UTC
        out.append(nxt)
        after = nxt
    return out


# --- timezone_named -------------------------------------------------------------------------


def test_timezone_named_known_and_default() -> None:
    assert timezone_named(None) == ZoneInfo("UTC")
    assert timezone_named("Europe/Berlin").key == "Europe/Berlin"
    assert timezone_named("America/Argentina/Buenos_Aires").key == (
        "America/Argentina/Buenos_Aires"
    )
    assert timezone_named("Etc/GMT+5").key == "Etc/GMT+5"


@pytest.mark.parametrize(
    "name",
    [
        "",
        " ",
        "Nowhere/Special",
        "europe/berlin",
        "Europe/Berlin ",
        "Europe/Berlin\x00",
        "Europe/Berlin\n",
        "../etc/passwd",
        "/etc/localtime",
        "Europe/../Europe/Berlin",
        "Europe//Berlin",
        "America",
        "localtime",
        "posixrules",
        "Factory",
        "right/UTC",
        "A" * 300,
        42,
    ],
)
def test_timezone_named_refuses(name: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        timezone_named(name)
    assert caught.value.message == (
        "`schedule_timezone` must be an IANA timezone name like Europe/Berlin."
    )
    assert caught.value.status_code == 422


def test_timezone_named_field() -> None:
    with pytest.raises(ValidationError, match="`tz`"):
        timezone_named("Mars/Olympus", field="tz")


# --- parse_campaign_time --------------------------------------------------------------------

NOW = utc(2026, 3, 28, 12)  # Saturday; Berlin springs forward the next night


@pytest.mark.parametrize(
    ("text", "zone", "expected"),
    [
        ("2026-04-01T09:00:00+02:00", NEW_YORK, utc(2026, 4, 1, 7)),
        ("2026-04-01T09:00:00Z", BERLIN, utc(2026, 4, 1, 9)),
        ("2026-04-01T09:00:00-04:00", None, utc(2026, 4, 1, 13)),
        ("2026-04-01T09:00:00", BERLIN, utc(2026, 4, 1, 7)),
        ("2026-04-01T09:00:00", NEW_YORK, utc(2026, 4, 1, 13)),
        ("2026-04-01T09:00:00", None, utc(2026, 4, 1, 9)),
        ("2026-04-01 09:00", BERLIN, utc(2026, 4, 1, 7)),
        ("  2026-04-01T09:00:00  ", BERLIN, utc(2026, 4, 1, 7)),
        ("2026-04-01", BERLIN, utc(2026, 3, 31, 22)),
        # before the change: still CET
        ("2026-03-28T23:00:00", BERLIN, utc(2026, 3, 28, 22)),
        # nonexistent 02:30 is read with the pre-gap offset: 01:30Z = 03:30 CEST
        ("2026-03-29T02:30:00", BERLIN, utc(2026, 3, 29, 1, 30)),
    ],
)
def test_parse_iso(text: str, zone: ZoneInfo | None, expected: datetime) -> None:
    got = parse_campaign_time(text, NOW, zone)
    assert got == expected
    assert got.tzinfo is UTC


def test_parse_iso_ambiguous_is_first_pass() -> None:
    now = utc(2026, 10, 1)
    # 02:30 happens twice on 2026-10-25 in Berlin; fold=0 is the CEST one
    assert parse_campaign_time("2026-10-25T02:30:00", now, BERLIN) == utc(2026, 10, 25, 0, 30)
    # an explicit offset picks the second pass
    assert parse_campaign_time("2026-10-25T02:30:00+01:00", now, BERLIN) == utc(2026, 10, 25, 1, 30)


@pytest.mark.parametrize(
    ("text", "zone", "now", "expected"),
    [
        # 09:00 local tomorrow, which is already summer time in Berlin (dateparser alone
        # would give 08:00Z here)
        ("tomorrow at 9am", BERLIN, NOW, utc(2026, 3, 29, 7)),
        ("tomorrow at 9am", NEW_YORK, NOW, utc(2026, 3, 29, 13)),
        ("tomorrow at 9am", None, NOW, utc(2026, 3, 29, 9)),
        ("next monday 10:00", BERLIN, NOW, utc(2026, 3, 30, 8)),
        ("in 2 hours", BERLIN, NOW, utc(2026, 3, 28, 14)),
        ("in 90 minutes", NEW_YORK, NOW, utc(2026, 3, 28, 13, 30)),
        ("2 hours from now", None, NOW, utc(2026, 3, 28, 14)),
        # elapsed time across the gap: 01:30 CET + 2 h is 04:30 CEST
        ("in 2 hours", BERLIN, utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 2, 30)),
        # a phrase naming its own zone keeps it
        ("tomorrow 9am EST", BERLIN, NOW, utc(2026, 3, 29, 14)),
        # "now" in New York is 08:00 on the 28th, so "at 9am" is today there
        ("9am", NEW_YORK, NOW, utc(2026, 3, 28, 13)),
    ],
)
def test_parse_natural(text: str, zone: ZoneInfo | None, now: datetime, expected: datetime) -> None:
    got = parse_campaign_time(text, now, zone)
    assert got == expected
    assert got.tzinfo is UTC


def test_parse_accepts_now_in_any_zone() -> None:
    assert parse_campaign_time("in 2 hours", NOW.astimezone(BERLIN), BERLIN) == utc(2026, 3, 28, 14)


def test_parse_horizon_edges() -> None:
    assert parse_campaign_time("2026-04-27T12:00:00Z", NOW, None) == NOW + timedelta(days=30)
    with pytest.raises(ValidationError, match=r"^`scheduled_at` must be at most 30 days ahead"):
        parse_campaign_time("2026-04-27T12:00:01Z", NOW, None)
    with pytest.raises(ValidationError, match=r"^`scheduled_at` must be in the future\.$"):
        parse_campaign_time("2026-03-28T12:00:00Z", NOW, None)
    # 13:00 local Berlin is 12:00Z: not after now
    with pytest.raises(ValidationError, match="must be in the future"):
        parse_campaign_time("2026-03-28T13:00:00", NOW, BERLIN)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2026-03-01T00:00:00Z", "must be in the future"),
        ("yesterday", "must be in the future"),
        ("2026-06-01T00:00:00Z", "must be at most 30 days ahead"),
        ("in 3 months", "must be at most 30 days ahead"),
        ("the twelfth of never", "is neither an ISO 8601 timestamp nor a time we can read"),
        ("2026-13-45T99:00", "is neither an ISO 8601 timestamp nor a time we can read"),
        ("tomorrow " * 100, "is neither an ISO 8601 timestamp nor a time we can read"),
        ("", "must be an ISO 8601 timestamp or a phrase"),
        ("   ", "must be an ISO 8601 timestamp or a phrase"),
    ],
)
def test_parse_refuses(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=f"^`scheduled_at` .*{message}"):
        parse_campaign_time(text, NOW, BERLIN)


@pytest.mark.parametrize("text", [None, 42, b"tomorrow"])
def test_parse_refuses_non_str(text: Any) -> None:
    with pytest.raises(ValidationError, match="`scheduled_at`"):
        parse_campaign_time(text, NOW, None)


def test_parse_needs_aware_now() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_campaign_time("in 1 hour", datetime(2026, 3, 28), None)


# --- validate_recurrence --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("FREQ=WEEKLY;BYDAY=MO", "FREQ=WEEKLY;BYDAY=MO"),
        ("RRULE:FREQ=WEEKLY;BYDAY=MO", "FREQ=WEEKLY;BYDAY=MO"),
        ("rrule:freq=weekly;byday=mo,we;", "FREQ=WEEKLY;BYDAY=MO,WE"),
        ("  FREQ=DAILY ; BYHOUR=9 ", "FREQ=DAILY;BYHOUR=9"),
        ("FREQ=HOURLY;INTERVAL=2", "FREQ=HOURLY;INTERVAL=2"),
        ("FREQ=DAILY;BYHOUR=8,12,17;BYMINUTE=30", "FREQ=DAILY;BYHOUR=8,12,17;BYMINUTE=30"),
        ("FREQ=MONTHLY;BYDAY=-1FR;COUNT=12", "FREQ=MONTHLY;BYDAY=-1FR;COUNT=12"),
        ("FREQ=DAILY;UNTIL=20261231T235959Z", "FREQ=DAILY;UNTIL=20261231T235959Z"),
        ("FREQ=DAILY;UNTIL=20261231T235959", "FREQ=DAILY;UNTIL=20261231T235959"),
        ("FREQ=DAILY;UNTIL=20261231", "FREQ=DAILY;UNTIL=20261231"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29"),
    ],
)
def test_validate_recurrence_accepts(rule: str, expected: str) -> None:
    assert validate_recurrence(rule) == expected


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("FREQ=MINUTELY", "too often"),
        ("FREQ=SECONDLY;INTERVAL=30", "too often"),
        ("RRULE:FREQ=MINUTELY;INTERVAL=15", "too often"),
        ("FREQ=HOURLY;BYMINUTE=0,30", "too often"),
        ("FREQ=DAILY;BYSECOND=0,1,2", "too often"),
        ("DTSTART:20260101T090000Z\nRRULE:FREQ=DAILY", "single line"),
        ("DTSTART:20260101T090000Z RRULE:FREQ=DAILY", "DTSTART"),
        ("FREQ=DAILY;DTSTART=20260101T090000Z", "DTSTART"),
        ("FREQ=DAILY\r", "single line"),
        ("FREQ=DAILY\tBYHOUR=9", "single line"),
        ("FREQ=DAILY;BYHOUR=9\u00a0", "single line"),
        ("EXDATE:20260101T090000Z", "single RRULE"),
        ("hello", "must be an RRULE"),
        ("", "must be an RRULE"),
        ("   ", "must be an RRULE"),
        ("RRULE:", "must be an RRULE"),
        ("BYDAY=MO", "must be an RRULE"),
        ("FREQ=FORTNIGHTLY", "must be an RRULE"),
        ("FREQ=DAILY;FREQ=WEEKLY", "must be an RRULE"),
        ("FREQ=DAILY;BYHOUR", "must be an RRULE"),
        ("FREQ=DAILY;BYHOUR=", "must be an RRULE"),
        ("FREQ=DAILY;FOO=BAR", "must be an RRULE"),
        ("FREQ=DAILY;BYHOUR=25", "must be an RRULE"),
        ("FREQ=WEEKLY;BYDAY=XX", "must be an RRULE"),
        ("FREQ=DAILY;COUNT=0", "positive whole COUNT"),
        ("FREQ=DAILY;COUNT=-1", "positive whole COUNT"),
        ("FREQ=DAILY;INTERVAL=0", "positive whole INTERVAL"),
        ("FREQ=DAILY;INTERVAL=two", "positive whole INTERVAL"),
        ("FREQ=DAILY;COUNT=3;UNTIL=20261231T000000Z", "not both"),
        ("FREQ=DAILY;UNTIL=tomorrow", "UNTIL"),
        ("FREQ=DAILY;UNTIL=20261332T000000Z", "UNTIL"),
        ("FREQ=DAILY;UNTIL=99991231T000000Z", "UNTIL"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "never occurs"),
        ("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "never occurs"),
        ("FREQ=DAILY;BYSETPOS=2", "never occurs"),
        ("FREQ=WEEKLY;BYDAY=MO;" + "BYHOUR=9;" * 100, "at most 500 characters"),
    ],
)
def test_validate_recurrence_refuses(rule: str, message: str) -> None:
    with pytest.raises(ValidationError, match=f"^`recurrence` .*{message}"):
        validate_recurrence(rule)


def test_validate_recurrence_length_limit() -> None:
    rule = "FREQ=DAILY;BYHOUR=9"
    padded = rule + ";" * (MAX_RULE_LENGTH - len(rule))
    assert validate_recurrence(padded) == rule
    with pytest.raises(ValidationError, match="at most 500"):
        validate_recurrence(padded + ";")


@pytest.mark.parametrize("rule", [None, 42, ["FREQ=DAILY"]])
def test_validate_recurrence_non_str(rule: Any) -> None:
    with pytest.raises(ValidationError, match=r"^`recurrence` must be an RRULE"):
        validate_recurrence(rule)


def test_validate_recurrence_field() -> None:
    with pytest.raises(ValidationError, match=r"^`rrule` "):
        validate_recurrence("FREQ=MINUTELY", field="rrule")


# --- Recurrence -----------------------------------------------------------------------------


def test_daily_berlin_keeps_local_time_across_spring_forward() -> None:
    recurrence = Recurrence("FREQ=DAILY", BERLIN, local(BERLIN, 2026, 3, 27, 9))
    got = walk(recurrence, utc(2026, 3, 27), 4)
    assert got == [
        utc(2026, 3, 27, 8),
        utc(2026, 3, 28, 8),
        utc(2026, 3, 29, 7),  # CEST from here
        utc(2026, 3, 30, 7),
    ]
    assert {o.astimezone(BERLIN).hour for o in got} == {9}


def test_daily_berlin_keeps_local_time_across_fall_back() -> None:
    recurrence = Recurrence(
        "RRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0", BERLIN, utc(2026, 10, 20)
    )
    got = walk(recurrence, utc(2026, 10, 23, 12), 4)
    assert got == [
        utc(2026, 10, 24, 7),
        utc(2026, 10, 25, 8),  # CET from here
        utc(2026, 10, 26, 8),
        utc(2026, 10, 27, 8),
    ]
    assert {(o.astimezone(BERLIN).hour, o.astimezone(BERLIN).minute) for o in got} == {(9, 0)}


def test_weekly_new_york_across_both_changes() -> None:
    start = local(NEW_YORK, 2026, 3, 2, 10)  # a Monday, EST
    recurrence = Recurrence("FREQ=WEEKLY;BYDAY=MO", NEW_YORK, start)
    assert start == utc(2026, 3, 2, 15)
    # strictly after: the start itself is not "after" the start
    assert recurrence.next_after(start) == utc(2026, 3, 9, 14)  # EDT since 2026-03-08
    assert recurrence.next_after(start - timedelta(seconds=1)) == start
    autumn = walk(recurrence, utc(2026, 10, 20), 3)
    assert autumn == [utc(2026, 10, 26, 14), utc(2026, 11, 2, 15), utc(2026, 11, 9, 15)]
    assert {(o.astimezone(NEW_YORK).weekday(), o.astimezone(NEW_YORK).hour) for o in autumn} == {
        (0, 10)
    }


def test_count_exhausted() -> None:
    recurrence = Recurrence("FREQ=DAILY;COUNT=3", BERLIN, local(BERLIN, 2026, 3, 27, 9))
    got = walk(recurrence, utc(2026, 1, 1), 3)
    assert got == [utc(2026, 3, 27, 8), utc(2026, 3, 28, 8), utc(2026, 3, 29, 7)]
    assert recurrence.next_after(got[-1]) is None
    assert recurrence.next_after(utc(2030, 1, 1)) is None


def test_until_utc() -> None:
    start = local(BERLIN, 2026, 4, 1, 9)
    recurrence = Recurrence("FREQ=DAILY;UNTIL=20260405T070000Z", BERLIN, start)
    assert walk(recurrence, utc(2026, 3, 1), 5)[-1] == utc(2026, 4, 5, 7)
    assert recurrence.next_after(utc(2026, 4, 5, 7)) is None
    just_short = Recurrence("FREQ=DAILY;UNTIL=20260405T065959Z", BERLIN, start)
    assert just_short.next_after(utc(2026, 4, 4, 7)) is None
    assert just_short.latest_at_or_before(utc(2026, 5, 1), after=utc(2026, 3, 1)) == utc(
        2026, 4, 4, 7
    )


def test_until_utc_inside_repeated_hour() -> None:
    # Daily at 02:30 Berlin: on 2026-10-25 that is the first pass, 00:30Z. UNTIL 01:15Z
    # falls in the second pass (02:15 CET), later than 00:30Z, so the occurrence counts
    # even though its wall time 02:30 is "after" UNTIL's wall time 02:15.
    recurrence = Recurrence(
        "FREQ=DAILY;UNTIL=20261025T011500Z", BERLIN, local(BERLIN, 2026, 10, 20, 2, 30)
    )
    assert recurrence.next_after(utc(2026, 10, 24, 12)) == utc(2026, 10, 25, 0, 30)
    assert recurrence.next_after(utc(2026, 10, 25, 0, 30)) is None


def test_until_floating_and_date() -> None:
    start = local(NEW_YORK, 2026, 4, 1, 9)
    floating = Recurrence("FREQ=DAILY;UNTIL=20260403T090000", NEW_YORK, start)
    assert floating.next_after(utc(2026, 4, 2, 13)) == utc(2026, 4, 3, 13)
    assert floating.next_after(utc(2026, 4, 3, 13)) is None
    whole_day = Recurrence("FREQ=DAILY;UNTIL=20260403", NEW_YORK, start)
    assert whole_day.next_after(utc(2026, 4, 2, 13)) == utc(2026, 4, 3, 13)
    assert whole_day.next_after(utc(2026, 4, 3, 13)) is None


def test_latest_at_or_before_picks_latest_missed() -> None:
    recurrence = Recurrence("FREQ=HOURLY", BERLIN, utc(2026, 3, 28, 0))
    # down from 10:05Z to 15:30Z: 11:00 .. 15:00 were missed, only 15:00 is sent
    assert recurrence.latest_at_or_before(
        utc(2026, 3, 28, 15, 30), after=utc(2026, 3, 28, 10, 5)
    ) == utc(2026, 3, 28, 15)
    # the bounds: after is exclusive, instant inclusive
    assert recurrence.latest_at_or_before(utc(2026, 3, 28, 15), after=utc(2026, 3, 28, 14)) == utc(
        2026, 3, 28, 15
    )
    assert (
        recurrence.latest_at_or_before(utc(2026, 3, 28, 14, 59), after=utc(2026, 3, 28, 14)) is None
    )
    # before the start there is nothing
    assert recurrence.latest_at_or_before(utc(2026, 3, 27, 23), after=utc(2026, 3, 1)) is None


def test_latest_at_or_before_daily_across_dst() -> None:
    recurrence = Recurrence("FREQ=DAILY;BYDAY=MO,WE,FR", BERLIN, local(BERLIN, 2026, 3, 2, 9))
    # down from Thursday 2026-03-26 to Tuesday 2026-03-31: Fri 27 (CET), Mon 30 (CEST)
    got = recurrence.latest_at_or_before(utc(2026, 3, 31, 12), after=utc(2026, 3, 26, 12))
    assert got == utc(2026, 3, 30, 7)
    assert recurrence.latest_at_or_before(utc(2026, 3, 30, 6, 59), utc(2026, 3, 26)) == utc(
        2026, 3, 27, 8
    )


def test_occurrence_in_gap_moves_forward() -> None:
    recurrence = Recurrence("FREQ=DAILY", BERLIN, local(BERLIN, 2026, 3, 27, 2, 30))
    assert walk(recurrence, utc(2026, 3, 27, 12), 2) == [
        utc(2026, 3, 28, 1, 30),
        utc(2026, 3, 29, 1, 30),  # 02:30 does not exist: 03:30 CEST
    ]
    assert recurrence.next_after(utc(2026, 3, 29, 1, 30)) == utc(2026, 3, 30, 0, 30)


def test_hourly_gap_occurrences_coincide() -> None:
    recurrence = Recurrence("FREQ=HOURLY;BYHOUR=1,2,3", BERLIN, utc(2026, 3, 28))
    # local 02:00 (skipped) and 03:00 are the same instant, 01:00Z: one occurrence
    assert walk(recurrence, utc(2026, 3, 28, 23), 3) == [
        utc(2026, 3, 29, 0),
        utc(2026, 3, 29, 1),
        utc(2026, 3, 29, 23),
    ]
    assert recurrence.latest_at_or_before(utc(2026, 3, 29, 12), utc(2026, 3, 29)) == utc(
        2026, 3, 29, 1
    )


def test_repeated_hour_is_first_pass() -> None:
    recurrence = Recurrence("FREQ=HOURLY", BERLIN, utc(2026, 10, 24, 22))
    got = walk(recurrence, utc(2026, 10, 24, 22), 4)
    # wall 01:00, 02:00 (first pass, CEST), 03:00 CET: the second 02:00 is not separate
    assert got == [
        utc(2026, 10, 24, 23),
        utc(2026, 10, 25, 0),
        utc(2026, 10, 25, 2),
        utc(2026, 10, 25, 3),
    ]


def test_start_in_second_pass_drops_earlier_wall_match() -> None:
    start = utc(2026, 10, 25, 1, 30)  # 02:30 CET, the second 02:30
    recurrence = Recurrence("FREQ=DAILY", BERLIN, start)
    assert recurrence.next_after(start - timedelta(hours=3)) == utc(2026, 10, 26, 1, 30)


def test_recurrence_start_in_other_zone_and_output_utc() -> None:
    start = datetime(2026, 3, 27, 9, tzinfo=BERLIN)
    recurrence = Recurrence("FREQ=DAILY", BERLIN, start)
    nxt = recurrence.next_after(utc(2026, 3, 28))
    assert nxt == utc(2026, 3, 28, 8)
    assert nxt is not None and nxt.tzinfo is UTC


def test_recurrence_validates() -> None:
    with pytest.raises(ValidationError, match="too often"):
        Recurrence("FREQ=MINUTELY", BERLIN, utc(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        Recurrence("FREQ=DAILY", BERLIN, datetime(2026, 1, 1))
    recurrence = Recurrence("FREQ=DAILY", BERLIN, utc(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        recurrence.next_after(datetime(2026, 1, 1))


def test_recurrence_is_a_value() -> None:
    a = Recurrence("FREQ=DAILY", BERLIN, utc(2026, 1, 1))
    b = Recurrence("FREQ=DAILY", BERLIN, utc(2026, 1, 1))
    assert a == b
    assert hash(a) == hash(b)


# --- day_start / batch_due ------------------------------------------------------------------


def test_day_start_berlin() -> None:
    instant = local(BERLIN, 2026, 3, 28, 22)
    assert day_start(instant, BERLIN, 0) == utc(2026, 3, 27, 23)
    assert day_start(instant, BERLIN, 1) == utc(2026, 3, 28, 23)
    assert day_start(instant, BERLIN, 2) == utc(2026, 3, 29, 22)
    assert day_start(instant, BERLIN, 2) - day_start(instant, BERLIN, 1) == timedelta(hours=23)


def test_batch_due_berlin_spring() -> None:
    start = local(BERLIN, 2026, 3, 28, 22)
    assert start == utc(2026, 3, 28, 21)
    assert batch_due(start, BERLIN, 0) == start
    assert batch_due(start, BERLIN, 1) == utc(2026, 3, 28, 23)  # 2026-03-29 00:00 CET
    assert batch_due(start, BERLIN, 2) == utc(2026, 3, 29, 22)  # 2026-03-30 00:00 CEST
    assert batch_due(start, BERLIN, 3) == utc(2026, 3, 30, 22)


def test_batch_due_berlin_autumn_25_hour_day() -> None:
    start = local(BERLIN, 2026, 10, 24, 22)
    assert batch_due(start, BERLIN, 1) == utc(2026, 10, 24, 22)  # 10-25 00:00 CEST
    assert batch_due(start, BERLIN, 2) == utc(2026, 10, 25, 23)  # 10-26 00:00 CET
    assert batch_due(start, BERLIN, 2) - batch_due(start, BERLIN, 1) == timedelta(hours=25)


def test_batch_due_new_york() -> None:
    start = local(NEW_YORK, 2026, 3, 7, 20)
    assert start == utc(2026, 3, 8, 1)
    assert batch_due(start, NEW_YORK, 0) == start
    assert batch_due(start, NEW_YORK, 1) == utc(2026, 3, 8, 5)  # 03-08 00:00 EST
    assert batch_due(start, NEW_YORK, 2) == utc(2026, 3, 9, 4)  # 03-09 00:00 EDT
    autumn = local(NEW_YORK, 2026, 10, 31, 23, 59)
    assert batch_due(autumn, NEW_YORK, 1) == utc(2026, 11, 1, 4)
    assert batch_due(autumn, NEW_YORK, 2) == utc(2026, 11, 2, 5)
    assert batch_due(autumn, NEW_YORK, 2) - batch_due(autumn, NEW_YORK, 1) == timedelta(hours=25)


def test_day_start_uses_local_date_not_utc_date() -> None:
    # 2026-03-28T02:00Z is still the 27th in New York
    assert day_start(utc(2026, 3, 28, 2), NEW_YORK, 0) == utc(2026, 3, 27, 4)
    assert day_start(utc(2026, 3, 28, 2), NEW_YORK, 1) == utc(2026, 3, 28, 4)
    # and a start exactly at local midnight: batch 1 is a full day later
    midnight = local(BERLIN, 2026, 5, 1, 0)
    assert day_start(midnight, BERLIN, 0) == midnight
    assert batch_due(midnight, BERLIN, 1) == midnight + timedelta(days=1)


def test_day_start_where_midnight_is_skipped() -> None:
    # Santiago springs forward from 2026-09-06 00:00 (-04) to 01:00 (-03): the day begins
    # at 04:00Z, which reads 01:00 locally.
    first = day_start(utc(2026, 9, 6, 15), SANTIAGO, 0)
    assert first == utc(2026, 9, 6, 4)
    assert first.astimezone(SANTIAGO).hour == 1
    assert day_start(utc(2026, 9, 5, 15), SANTIAGO, 1) == first
    # and falls back from 2026-04-05 00:00 (-03) to 2026-04-04 23:00 (-04): 25-hour 4th
    assert day_start(utc(2026, 4, 4, 15), SANTIAGO, 0) == utc(2026, 4, 4, 3)
    assert day_start(utc(2026, 4, 4, 15), SANTIAGO, 1) == utc(2026, 4, 5, 4)


def test_day_start_and_batch_due_refuse() -> None:
    with pytest.raises(ValueError, match="batch"):
        batch_due(utc(2026, 1, 1), BERLIN, -1)
    with pytest.raises(ValueError, match="timezone-aware"):
        day_start(datetime(2026, 1, 1), BERLIN, 1)
    with pytest.raises(ValueError, match="timezone-aware"):
        batch_due(datetime(2026, 1, 1), BERLIN, 0)
