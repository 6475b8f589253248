"""Campaign calendar arithmetic: time zones, send times, RRULE recurrences and daily batches.

Pure functions over timezone-aware datetimes (no I/O beyond zoneinfo reading tz data). Every
instant that goes in or comes out is timezone-aware; every instant that comes out is in UTC.
Local wall times only exist in between, inside a :class:`zoneinfo.ZoneInfo`.

Wall time to instant (one rule everywhere: ``naive.replace(tzinfo=zone)``, i.e. ``fold=0``):

* an *ambiguous* local time (the repeated hour when clocks go back) is read as its first
  occurrence, the one still on summer time: 2026-10-25 02:30 Europe/Berlin is 00:30Z;
* a *nonexistent* local time (the skipped hour when clocks go forward) is read with the offset
  in force before the gap, which lands it as far past the gap as it was into it:
  2026-03-29 02:30 Europe/Berlin is 01:30Z, i.e. 03:30 CEST.

Recurrences are RFC 5545 RRULEs expanded by :mod:`dateutil.rrule` in local wall time (so
"daily at 09:00 Europe/Berlin" stays at 09:00 across DST changes), each local occurrence then
read as above. Two consequences of the gap rule: an occurrence inside the skipped hour moves
forward by the gap, and it may coincide with the next hourly occurrence, in which case the
two are one instant. Also following dateutil rather than RFC 5545, DTSTART is an occurrence
only if it matches the rule, and occurrences before ``start`` (possible only when ``start``
is the second pass through a repeated hour) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cached_property
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dateparser
from dateutil.rrule import rrule, rrulestr

from mailbridge.errors import ValidationError

__all__ = [
    "HORIZON",
    "MAX_RULE_LENGTH",
    "Recurrence",
    "batch_due",
    "day_start",
    "parse_campaign_time",
    "timezone_named",
    "validate_recurrence",
]

HORIZON = timedelta(days=30)
"""How far ahead a campaign may be scheduled."""

MAX_RULE_LENGTH = 500
"""Longest RRULE text accepted."""

_UTC_ZONE = ZoneInfo("UTC")
_MAX_TEXT = 200
# Every UTC offset lies strictly within ±24 h, so two offsets differ by less than this. The
# local-to-UTC mapping can run backwards across a transition, but never by more than _SLACK.
_SLACK = timedelta(hours=48)

_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")
# Files in the tz database that are not places, or not the plain IANA rules.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
_NOT_ZONE_PREFIXES = ("posix/", "right/")

_FREQS = frozenset({"YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY"})
_TOO_FREQUENT = frozenset({"MINUTELY", "SECONDLY"})
_UNTIL = re.compile(r"(\d{8})(?:T(\d{6})(Z?))?")
_MAX_UNTIL_YEAR = 9000  # leaves room for the slack arithmetic below year 9999
_POSITIVE = re.compile(r"[1-9]\d{0,5}")
# dateutil gives up at year 9999; starting here it checks one whole 400-year Gregorian cycle.
_PROBE_START = datetime(9600, 1, 1)

# "in 2 hours", "90 minutes from now", "in 1h and 30m": pure elapsed time under a day.
_ELAPSED = re.compile(
    r"(?:in\s+)?"
    r"(?:(?:\d+(?:\.\d+)?|an?)\s*(?:h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)\b"
    r"[\s,]*(?:and\s+)?)+"
    r"(?:from\s+now|later)?",
    re.IGNORECASE,
)


# --- time zones -------------------------------------------------------------------------------


def timezone_named(name: str | None, field: str = "schedule_timezone") -> ZoneInfo:
    """The IANA zone ``name`` (``None`` → UTC); anything else is a 422 naming ``field``."""
    if name is None:
        return _UTC_ZONE
    if (
        isinstance(name, str)
        and len(name) <= 64
        and _ZONE_NAME.fullmatch(name)
        and name not in _NOT_ZONES
        and not name.startswith(_NOT_ZONE_PREFIXES)
    ):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    raise ValidationError(f"`{field}` must be an IANA timezone name like Europe/Berlin.")


def _aware(instant: datetime, name: str) -> datetime:
    """``instant`` in UTC; a naive datetime is a programming error, not a user error."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got {instant!r}")
    return instant.astimezone(UTC)


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive local wall time of ``instant`` in ``zone``."""
    return instant.astimezone(zone).replace(tzinfo=None)


def _instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant of naive local ``wall`` in ``zone`` (fold=0: see the module docstring)."""
    return wall.replace(tzinfo=zone).astimezone(UTC)


def _midnight(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant local ``day`` begins in ``zone``, even where midnight is skipped."""
    return _instant(datetime.combine(day, time()), zone)


# --- send times -------------------------------------------------------------------------------


def _iso(text: str, zone: ZoneInfo) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return _instant(parsed, zone)
    return parsed.astimezone(UTC)


def _natural(text: str, now: datetime, zone: ZoneInfo) -> datetime | None:
    if _ELAPSED.fullmatch(text):
        # Elapsed time is counted on the UTC line: "in 2 hours" is 2 real hours even when
        # the clocks change in between.
        key, base = "UTC", now.replace(tzinfo=None)
    else:
        key, base = zone.key, _wall(now, zone)
    parsed = dateparser.parse(
        text,
        languages=["en"],
        settings={
            "TIMEZONE": key,
            "RETURN_AS_TIMEZONE_AWARE": True,
            "PREFER_DATES_FROM": "future",
            "RELATIVE_BASE": base,
        },
    )
    if parsed is None:
        return None
    if getattr(parsed.tzinfo, "zone", None) == key:
        # dateparser attaches the offset of RELATIVE_BASE to relative dates ("tomorrow at
        # 9am" across a DST change comes out an hour off), so keep its wall time and read
        # that in the zone ourselves.
        return _instant(parsed.replace(tzinfo=None), ZoneInfo(key))
    return parsed.astimezone(UTC)  # the text named its own zone or offset ("9am EST")


def parse_campaign_time(
    text: str, now: datetime, zone: ZoneInfo | None, field: str = "scheduled_at"
) -> datetime:
    """The UTC instant ``text`` names: after ``now`` and at most 30 days ahead, else 422.

    An ISO 8601 timestamp with an offset (``Z``, ``+02:00``) is taken as is; without one it
    is local wall time in ``zone`` (``None`` → UTC), read with fold=0 (see the module
    docstring for ambiguous and nonexistent times). Anything else is natural language read by
    dateparser relative to ``now`` as seen in ``zone``: "tomorrow at 9am" is 09:00 local;
    "in 2 hours" (hours, minutes, seconds only) is two elapsed hours.
    """
    zone = zone or _UTC_ZONE
    now = _aware(now, "now")
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(
            f"`{field}` must be an ISO 8601 timestamp or a phrase like 'in 1 hour'."
        )
    text = text.strip()
    instant = None if len(text) > _MAX_TEXT else _iso(text, zone) or _natural(text, now, zone)
    if instant is None:
        shown = text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"
        raise ValidationError(
            f"`{field}` {shown!r} is neither an ISO 8601 timestamp nor a time we can read."
        )
    if instant <= now:
        raise ValidationError(f"`{field}` must be in the future.")
    if instant - now > HORIZON:
        raise ValidationError(f"`{field}` must be at most 30 days ahead.")
    return instant


# --- recurrences ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    """A validated RRULE split for our use: dateutil's part, and UNTIL, which we apply."""

    text: str  # normalized, what validate_recurrence returns
    body: str  # text without UNTIL: dateutil expands it from a naive DTSTART
    until: tuple[date, time | None, bool] | None  # (date, time or None, written in UTC)

    def until_instant(self, zone: ZoneInfo) -> datetime | None:
        """UNTIL as a UTC instant: ``...Z`` as is, a floating time as wall time in ``zone``,
        and a bare date as the end of that local day (every occurrence on it is included).
        """
        if self.until is None:
            return None
        day, clock, utc = self.until
        if clock is None:
            return _midnight(day + timedelta(days=1), zone) - timedelta(microseconds=1)
        if utc:
            return datetime.combine(day, clock, tzinfo=UTC)
        return _instant(datetime.combine(day, clock), zone)


def _refuse(field: str, why: str) -> ValidationError:
    return ValidationError(f"`{field}` {why}")


def _parse_rule(rule: str, field: str) -> _Rule:
    usage = "must be an RRULE like FREQ=WEEKLY;BYDAY=MO."
    if not isinstance(rule, str) or not rule.strip():
        raise _refuse(field, usage)
    if len(rule) > MAX_RULE_LENGTH:
        raise _refuse(field, f"must be at most {MAX_RULE_LENGTH} characters.")
    if not rule.isascii() or not rule.isprintable():
        raise _refuse(field, "must be a single line of plain text, one RRULE.")
    text = rule.strip().upper()
    if text.startswith("RRULE:"):
        text = text.removeprefix("RRULE:").strip()
    if "DTSTART" in text:
        raise _refuse(field, "must not contain DTSTART: the campaign's start time is used.")
    if ":" in text:
        raise _refuse(field, "must be a single RRULE like FREQ=WEEKLY;BYDAY=MO, nothing else.")

    parts: dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        name, equals, value = (piece.strip() for piece in part.partition("="))
        if not equals or not name or not value or name in parts:
            raise _refuse(field, usage)
        parts[name] = value

    freq = parts.get("FREQ")
    if freq in _TOO_FREQUENT:
        raise _refuse(field, "recurs too often: FREQ=HOURLY is the most frequent allowed.")
    if freq not in _FREQS:
        raise _refuse(field, usage)
    for name in ("BYMINUTE", "BYSECOND"):
        if "," in parts.get(name, ""):
            raise _refuse(field, f"recurs too often: {name} takes a single value.")
    for name in ("COUNT", "INTERVAL"):
        if name in parts and not _POSITIVE.fullmatch(parts[name]):
            raise _refuse(field, f"must have a positive whole {name}.")
    if "COUNT" in parts and "UNTIL" in parts:
        raise _refuse(field, "may have COUNT or UNTIL, not both.")

    until = None
    if "UNTIL" in parts:
        until = _parse_until(parts["UNTIL"])
        if until is None:
            raise _refuse(field, "has an UNTIL that is not like 20261231T235959Z.")

    body = ";".join(f"{name}={value}" for name, value in parts.items() if name != "UNTIL")
    try:
        # A rule that matches nothing would keep dateutil searching to year 9999: require an
        # occurrence within one 400-year cycle, after which the calendar repeats.
        probe = rrulestr(_without(body, "COUNT"), dtstart=_PROBE_START)
        occurs = next(iter(probe), None) is not None
    except (ValueError, TypeError, KeyError, IndexError, OverflowError):
        raise _refuse(field, usage) from None
    if not occurs:
        raise _refuse(field, "never occurs.")
    return _Rule(
        text=";".join(f"{name}={value}" for name, value in parts.items()), body=body, until=until
    )


def _without(body: str, name: str) -> str:
    return ";".join(part for part in body.split(";") if not part.startswith(f"{name}="))


def _parse_until(value: str) -> tuple[date, time | None, bool] | None:
    match = _UNTIL.fullmatch(value)
    if match is None:
        return None
    day_text, clock_text, zulu = match.groups()
    try:
        day = datetime.strptime(day_text, "%Y%m%d").date()
        clock = None if clock_text is None else datetime.strptime(clock_text, "%H%M%S").time()
    except ValueError:
        return None
    if day.year > _MAX_UNTIL_YEAR:
        return None
    return day, clock, bool(zulu)


def validate_recurrence(rule: str, field: str = "recurrence") -> str:
    """``rule`` normalized (upper case, no ``RRULE:`` prefix), or a 422 naming ``field``.

    Refused: unparsable text, DTSTART or other properties (we supply DTSTART), anything more
    frequent than hourly (MINUTELY, SECONDLY, several BYMINUTE or BYSECOND values), COUNT and
    UNTIL together, a COUNT or INTERVAL below 1, a rule that never occurs, and text longer
    than :data:`MAX_RULE_LENGTH`. UNTIL may be UTC (``...Z``), floating (local wall time in
    the campaign's zone) or a bare date (through the end of that local day).
    """
    return _parse_rule(rule, field).text


@dataclass(frozen=True)
class Recurrence:
    """The occurrences of ``rule`` in ``zone`` from ``start`` (the DTSTART instant, aware).

    ``rule`` is validated on construction (``ValidationError`` if refused). Cost is linear
    in the number of occurrences since ``start``: dateutil always iterates from DTSTART.
    """

    rule: str
    zone: ZoneInfo
    start: datetime

    def __post_init__(self) -> None:
        _aware(self.start, "start")
        _ = self._plan

    @cached_property
    def _plan(self) -> tuple[rrule, datetime | None]:
        parsed = _parse_rule(self.rule, "recurrence")
        until = parsed.until_instant(self.zone)
        body = parsed.body
        if until is not None:
            # Only to stop dateutil: UNTIL itself is applied to the UTC instants.
            loose = _wall(until, self.zone) + _SLACK
            body = f"{body};UNTIL={loose:%Y%m%dT%H%M%S}"
        expanded = rrulestr(body, dtstart=_wall(self.start, self.zone))
        assert isinstance(expanded, rrule)
        return expanded, until

    def _walk(self, wall: datetime) -> Iterator[datetime]:
        """UTC occurrences whose local wall time is at or after ``wall``, in wall-time order.

        The UTC instants may step back at a transition, but by less than ``_SLACK``. Stops
        for good once more than that past UNTIL.
        """
        expanded, until = self._plan
        start = self.start.astimezone(UTC)
        for local in expanded.xafter(wall, inc=True):
            occurrence = _instant(local, self.zone)
            if until is not None and occurrence > until:
                if occurrence > until + _SLACK:
                    return
                continue
            if occurrence >= start:
                yield occurrence

    def next_after(self, instant: datetime) -> datetime | None:
        """The first occurrence strictly after ``instant``, or None once the rule is over."""
        instant = _aware(instant, "instant")
        best: datetime | None = None
        for occurrence in self._walk(_wall(instant, self.zone) - _SLACK):
            if best is not None and occurrence >= best + _SLACK:
                break  # nothing later in wall time can come before ``best`` in UTC
            if occurrence > instant and (best is None or occurrence < best):
                best = occurrence
        return best

    def latest_at_or_before(self, instant: datetime, after: datetime) -> datetime | None:
        """The latest occurrence ``o`` with ``after < o <= instant``, or None."""
        instant, after = _aware(instant, "instant"), _aware(after, "after")
        latest: datetime | None = None
        for occurrence in self._walk(_wall(after, self.zone) - _SLACK):
            if occurrence > instant + _SLACK:
                break
            if after < occurrence <= instant and (latest is None or occurrence > latest):
                latest = occurrence
        return latest


# --- daily batches ----------------------------------------------------------------------------


def day_start(instant: datetime, zone: ZoneInfo, days_ahead: int) -> datetime:
    """The UTC instant of the local midnight ``days_ahead`` days after ``instant``'s local date.

    ``days_ahead=0`` is the midnight that began ``instant``'s local day, 1 the next one.
    Local days are 23 or 25 hours long across DST changes; where midnight itself is skipped
    (e.g. America/Santiago) this is the first instant of the local day.
    """
    local_day = _aware(instant, "instant").astimezone(zone).date()
    return _midnight(local_day + timedelta(days=days_ahead), zone)


def batch_due(start: datetime, zone: ZoneInfo, batch: int) -> datetime:
    """When batch ``batch`` of a campaign started at ``start`` is due: ``start`` for batch 0,
    else the local midnight ``batch`` days after the local date of ``start``.
    """
    if batch < 0:
        raise ValueError(f"batch must be >= 0, got {batch}")
    start = _aware(start, "start")
    return start if batch == 0 else day_start(start, zone, batch)
