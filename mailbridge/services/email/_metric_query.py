"""What ``GET /emails/metrics`` asks for, checked: the range, the buckets, the metrics, the
dimensions and the filters (Resend's query parameters, lists comma-separated).

- ``start_date`` / ``end_date``: an ISO 8601 date (a whole day in ``timezone``: an end
  date includes its day) or date-time (without an offset: in ``timezone``). Defaults: the
  end is now; the start is the beginning of the day six days before the end's, so that
  ``daily`` gives seven buckets. At most 366 days (31 for ``hourly``).
- ``timezone``: an IANA name (default ``UTC``), where periods begin.
- ``granularity``: ``hourly``, ``daily`` (default), ``weekly`` (from Monday) or ``monthly``.
- ``metrics``: the names to answer (default: all); ``dimensions``: ``period``, ``domain``,
  ``email``, ``broadcast`` (default none: the totals alone); ``domain_id``, ``email_id``,
  ``broadcast_id``: lists of ids to keep. ``broadcast`` (dimension or filter) does not
  combine with ``email`` (dimension or filter), as Resend's SDKs say.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mailbridge.errors import ValidationError

# In the order Resend's SDK types list them.
METRICS = (
    "received", "delivered", "complained", "suppressed", "bounced", "bounced_transient",
    "bounced_permanent", "bounced_undetermined", "opened", "clicked", "unsubscribed",
    "delivery_delayed", "failed", "sent", "unique_opened", "unique_clicked", "delivery_rate",
    "open_rate", "click_rate", "bounce_rate", "complaint_rate", "unsubscribe_rate",
)  # fmt: skip
DIMENSIONS = ("period", "domain", "email", "broadcast")
GRANULARITIES = ("hourly", "daily", "weekly", "monthly")
MAX_DAYS = {"hourly": 31, "daily": 366, "weekly": 366, "monthly": 366}
MAX_IDS = 100  # a filter's ids


@dataclass(frozen=True)
class MetricsQuery:
    start: datetime  # aware, UTC
    end: datetime  # aware, UTC, exclusive
    zone: ZoneInfo
    granularity: str
    metrics: tuple[str, ...]
    dimensions: tuple[str, ...]
    domain_ids: tuple[str, ...] = ()
    email_ids: tuple[str, ...] = ()
    broadcast_ids: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls,
        now: datetime,
        *,
        start_date: str | None = None,
        end_date: str | None = None,
        timezone: str | None = None,
        granularity: str | None = None,
        metrics: str | None = None,
        dimensions: str | None = None,
        domain_id: str | None = None,
        email_id: str | None = None,
        broadcast_id: str | None = None,
    ) -> MetricsQuery:
        zone = _zone(timezone or "UTC")
        step = granularity or "daily"
        if step not in GRANULARITIES:
            raise ValidationError(f"`granularity` must be one of {', '.join(GRANULARITIES)}.")
        end = _instant(end_date, zone, "end_date", end_of_day=True) if end_date else now
        if start_date:
            start = _instant(start_date, zone, "start_date", end_of_day=False)
        else:
            first_day = (end.astimezone(zone) - timedelta(days=6)).date()
            start = datetime.combine(first_day, time(), zone).astimezone(UTC)
        if start >= end:
            raise ValidationError("`start_date` must be before `end_date`.")
        if end - start > timedelta(days=MAX_DAYS[step]):
            raise ValidationError(
                f"A range of at most {MAX_DAYS[step]} days with granularity {step}."
            )
        chosen_dimensions = _names(dimensions, DIMENSIONS, "dimensions")
        query = cls(
            start=start,
            end=end,
            zone=zone,
            granularity=step,
            metrics=_names(metrics, METRICS, "metrics") or METRICS,
            dimensions=chosen_dimensions,
            domain_ids=_ids(domain_id, "domain_id"),
            email_ids=_ids(email_id, "email_id"),
            broadcast_ids=_ids(broadcast_id, "broadcast_id"),
        )
        by_broadcast = "broadcast" in chosen_dimensions or query.broadcast_ids
        by_email = "email" in chosen_dimensions or query.email_ids
        if by_broadcast and by_email:
            raise ValidationError(
                "The broadcast dimension or `broadcast_id` cannot be combined with the email "
                "dimension or `email_id`."
            )
        return query

    @property
    def about_sent_mail_only(self) -> bool:
        """Whether received mail is out of it: asked by email or by broadcast."""
        return bool(
            self.email_ids or self.broadcast_ids or {"email", "broadcast"} & set(self.dimensions)
        )


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        raise ValidationError(
            f"`timezone` {name[:60]!r} is not an IANA name like Europe/Berlin."
        ) from None


def _instant(text: str, zone: ZoneInfo, field: str, *, end_of_day: bool) -> datetime:
    value = text.strip()
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            if end_of_day:
                day += timedelta(days=1)
            return datetime.combine(day, time(), zone).astimezone(UTC)
        instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(
            f"`{field}` must be an ISO 8601 date or date-time, not {value[:40]!r}."
        ) from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=zone)
    return instant.astimezone(UTC)


def _names(text: str | None, allowed: tuple[str, ...], field: str) -> tuple[str, ...]:
    if not text:
        return ()
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise ValidationError(
            f"`{field}` names {', '.join(repr(name[:40]) for name in unknown[:5])}; "
            f"known: {', '.join(allowed)}."
        )
    return tuple(dict.fromkeys(names))


def _ids(text: str | None, field: str) -> tuple[str, ...]:
    if not text:
        return ()
    ids = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if len(ids) > MAX_IDS:
        raise ValidationError(f"`{field}` names at most {MAX_IDS} ids.")
    if any(len(one) > 64 for one in ids):
        raise ValidationError(f"`{field}` holds ids, each at most 64 characters.")
    return ids


def period_start(instant: datetime, query: MetricsQuery) -> datetime:
    """The beginning, in the query's timezone, of the period ``instant`` falls in."""
    local = instant.astimezone(query.zone)
    if query.granularity == "hourly":
        # The local hour (a repeated hour at a clock change keeps its fold: two periods).
        return local.replace(minute=0, second=0, microsecond=0)
    day = local.date()
    if query.granularity == "weekly":
        day -= timedelta(days=day.weekday())
    elif query.granularity == "monthly":
        day = day.replace(day=1)
    return datetime.combine(day, time(), query.zone)


def period_label(start: datetime, query: MetricsQuery) -> str:
    """An hour as a date-time with its offset; a day, week or month as its first date."""
    if query.granularity == "hourly":
        return start.isoformat(timespec="seconds")
    return start.date().isoformat()


def every_period(query: MetricsQuery) -> list[datetime]:
    """Each period's beginning from the range's first to its last."""
    found: list[datetime] = []
    current = period_start(query.start, query)
    while current.astimezone(UTC) < query.end:
        found.append(current)
        current = _next_period(current, query)
    return found


def _next_period(start: datetime, query: MetricsQuery) -> datetime:
    if query.granularity == "hourly":
        return (start.astimezone(UTC) + timedelta(hours=1)).astimezone(query.zone)
    day = start.date()
    if query.granularity == "daily":
        day += timedelta(days=1)
    elif query.granularity == "weekly":
        day += timedelta(days=7)
    else:
        day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return datetime.combine(day, time(), query.zone)
