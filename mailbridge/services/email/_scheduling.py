"""When to send: ISO 8601 or natural language ("in 1 hour", "tomorrow at 9am"), read as UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dateparser

from mailbridge.errors import ValidationError

HORIZON = timedelta(days=30)


def _iso(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _natural(text: str, now: datetime) -> datetime | None:
    parsed = dateparser.parse(
        text,
        languages=["en"],
        settings={
            "TIMEZONE": "UTC",
            "TO_TIMEZONE": "UTC",
            "RETURN_AS_TIMEZONE_AWARE": True,
            "PREFER_DATES_FROM": "future",
            "RELATIVE_BASE": now.astimezone(UTC).replace(tzinfo=None),
        },
    )
    return parsed.astimezone(UTC) if parsed is not None else None


def parse_send_time(text: str, now: datetime, field: str = "scheduled_at") -> datetime:
    """The instant ``text`` names: in the future and at most 30 days ahead, else 422."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(
            f"`{field}` must be an ISO 8601 timestamp or a phrase like 'in 1 hour'."
        )
    text = text.strip()
    instant = _iso(text) or _natural(text, now)
    if instant is None:
        raise ValidationError(
            f"`{field}` {text!r} is neither an ISO 8601 timestamp nor a time we can read."
        )
    if instant <= now:
        raise ValidationError(f"`{field}` must be in the future.")
    if instant - now > HORIZON:
        raise ValidationError(f"`{field}` must be at most 30 days ahead.")
    return instant
