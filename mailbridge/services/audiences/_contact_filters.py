"""The filters of contact lists (``GET /contacts`` and an audience's contacts).

``audience_id``, ``email`` (exact, case-insensitive), ``email_contains`` (substring,
case-insensitive), ``unsubscribed`` (``true``/``false``), ``created_after`` and
``created_before`` (ISO 8601, exclusive, compared to the millisecond as the API shows
``created_at``); all of them narrow the list together.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Select

from mailbridge.errors import ValidationError
from mailbridge.storage.tables import Contact


@dataclass(frozen=True)
class ContactFilters:
    """The filters of ``GET /contacts``; every one narrows the list (AND)."""

    audience_id: str | None = None
    email: str | None = None
    email_contains: str | None = None
    unsubscribed: bool | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None

    @classmethod
    def parse(
        cls,
        *,
        audience_id: str | None = None,
        email: str | None = None,
        email_contains: str | None = None,
        unsubscribed: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
    ) -> ContactFilters:
        flag: bool | None = None
        if unsubscribed is not None:
            if unsubscribed.lower() not in ("true", "false"):
                raise ValidationError("`unsubscribed` must be `true` or `false`.")
            flag = unsubscribed.lower() == "true"
        return cls(
            audience_id=audience_id,
            email=email.strip().lower() if email is not None else None,
            email_contains=email_contains.strip().lower() if email_contains else None,
            unsubscribed=flag,
            created_after=_instant(created_after, "created_after"),
            created_before=_instant(created_before, "created_before"),
        )


def _instant(text: str | None, name: str) -> datetime | None:
    if text is None:
        return None
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(f"`{name}` must be an ISO 8601 timestamp.") from None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


def filtered(query: Select[tuple[Contact]], filters: ContactFilters) -> Select[tuple[Contact]]:
    if filters.audience_id is not None:
        query = query.where(Contact.audience_id == filters.audience_id)
    if filters.email is not None:
        query = query.where(Contact.email == filters.email)
    if filters.email_contains:
        query = query.where(Contact.email.contains(filters.email_contains, autoescape=True))
    if filters.unsubscribed is not None:
        query = query.where(Contact.unsubscribed.is_(filters.unsubscribed))
    # Timestamps compare as the API shows them, to the millisecond: a contact is not
    # "created after" the created_at it reports itself.
    if filters.created_after is not None:
        query = query.where(Contact.created_at >= _next_ms(_floor_ms(filters.created_after)))
    if filters.created_before is not None:
        before = filters.created_before
        aligned = _floor_ms(before)
        query = query.where(
            Contact.created_at < (aligned if aligned == before else _next_ms(aligned))
        )
    return query


def _floor_ms(instant: datetime) -> datetime:
    return instant.replace(microsecond=instant.microsecond - instant.microsecond % 1000)


def _next_ms(instant: datetime) -> datetime:
    return instant + timedelta(milliseconds=1)
