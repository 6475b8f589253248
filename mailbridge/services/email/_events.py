"""An email's life, one event at a time: the event row, the email's status, the activity feed.

Every change of an email's state goes through :func:`record_email_event`, in the same
transaction as the change, so ``GET /emails/:id`` (events), webhooks and automations
all see the same history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.services.kernel import record_event
from mailbridge.storage.tables import Email, EmailEvent
from mailbridge.storage.types import new_id

# Event types (DESIGN §5); each is also the status an email takes when it happens.
EMAIL_EVENT_TYPES = frozenset({
    "queued", "scheduled", "sent", "delivered", "delivery_delayed", "bounced",
    "complained", "opened", "clicked", "failed", "canceled", "suppressed", "replied",
})  # fmt: skip
# Events that feed webhooks and automations as ``email.<type>`` (issue 5 of 5's list).
PUBLISHED = frozenset(EMAIL_EVENT_TYPES - {"queued", "canceled"})
# Waiting for delivery: the statuses the delivery queue claims from.
PENDING_STATUSES = ("queued", "scheduled", "delivery_delayed")
# Engagement never hides a worse outcome: an opened email that later bounces is bounced.
STICKY = frozenset({"bounced", "complained", "failed", "canceled", "suppressed"})
# An email in these statuses with ``due_at`` set has recipients still being delivered to
# (an attempt under way, or a retry to come): its status is the delivery worker's until
# that is over (``services.delivery``), whatever one recipient's open or bounce says —
# the queue claims by status.
DELIVERING = frozenset({"sent", "delivery_delayed"})


def activity_data(email: Email | dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """What ``email.<type>`` activity (webhooks, automations) says about the email."""
    row = email if isinstance(email, dict) else email.__dict__
    return {
        "email_id": row["id"],
        "from": row["from_address"],
        "to": list(row["to"]),
        "subject": row["subject"],
        "created_at": isoformat_ms(row["created_at"]),
        "tags": list(row.get("tags") or []),
        **data,
    }


def event_rows(
    row: dict[str, Any], event_type: str, data: dict[str, Any], now: datetime
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The ``email_events`` row and, for published types, the activity row of one event of
    an email being stored in bulk (the ORM path is :func:`record_email_event`)."""
    event = {
        "id": new_id(), "email_id": row["id"], "team_id": row["team_id"], "type": event_type,
        "data": data, "created_at": now,
    }  # fmt: skip
    activity = None
    if event_type in PUBLISHED:
        activity = {
            "id": new_id(), "team_id": row["team_id"], "type": f"email.{event_type}",
            "data": activity_data(row, data), "created_at": now,
        }  # fmt: skip
    return event, activity


def record_email_event(
    session: AsyncSession,
    clock: Clock,
    email: Email,
    event_type: str,
    data: dict[str, Any] | None = None,
    *,
    update_status: bool = True,
) -> EmailEvent:
    """Add the event (and its ``email.<type>`` activity) to the session; set the status."""
    if event_type not in EMAIL_EVENT_TYPES:
        raise ValueError(f"unknown email event {event_type!r}")
    now = clock.now()
    event = EmailEvent(
        email_id=email.id, team_id=email.team_id, type=event_type, data=dict(data or {}),
        created_at=now,
    )  # fmt: skip
    session.add(event)
    if (
        update_status
        and not (email.status in STICKY and event_type not in STICKY)
        and not (email.due_at is not None and email.status in DELIVERING)
    ):
        email.status = event_type
        email.last_event = event_type
    email.updated_at = now
    if event_type in PUBLISHED:
        record_event(session, clock, email.team_id, f"email.{event_type}",
                     activity_data(email, dict(data or {})))  # fmt: skip
    return event
