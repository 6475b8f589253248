"""A webhook's events, as Resend's API shapes them, read from the delivery rows.

An event of a webhook is one activity event fanned out to it: its first delivery (the
row with no ``replay_of``) and the replays queued since. Its ``status`` is the latest
delivery's: ``success``, ``failed``, ``attempting`` (tried, or replayed, and due
again) or ``pending`` (not tried yet). Its attempts are every delivery's attempt log,
newest first; an attempt's id is derived from its delivery's and its number, so it is
the same on every read. The delivery routes (``_deliveries``) stay as they are.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.webhooks._deliveries import replay_delivery
from mailbridge.storage.pagination import Page, PageRequest, page_in_memory, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Webhook, WebhookDelivery


@dataclass(frozen=True)
class WebhookEvent:
    deliveries: Sequence[WebhookDelivery]  # the first, then its replays, oldest first

    @property
    def first(self) -> WebhookDelivery:
        return self.deliveries[0]

    @property
    def latest(self) -> WebhookDelivery:
        return self.deliveries[-1]

    @property
    def status(self) -> str:
        latest = self.latest
        if latest.status == "succeeded":
            return "success"
        if latest.status == "failed":
            return "failed"
        return "attempting" if latest.attempts or len(self.deliveries) > 1 else "pending"


@dataclass(frozen=True)
class Attempt:
    id: str
    delivery_id: str
    number: int
    entry: dict[str, Any]


async def _first_delivery(
    session: AsyncSession, webhook_id: int, event_id: str
) -> WebhookDelivery | None:
    if not is_uuid(event_id):
        return None
    found: WebhookDelivery | None = await session.scalar(
        select(WebhookDelivery).where(
            WebhookDelivery.webhook_id == webhook_id,
            WebhookDelivery.event_id == event_id,
            WebhookDelivery.replay_of.is_(None),
        )
    )
    return found


async def _events(
    session: AsyncSession, webhook_id: int, firsts: Sequence[WebhookDelivery]
) -> list[WebhookEvent]:
    replays: dict[str, list[WebhookDelivery]] = {}
    if firsts:
        rows = await session.scalars(
            select(WebhookDelivery)
            .where(
                WebhookDelivery.webhook_id == webhook_id,
                WebhookDelivery.event_id.in_([first.event_id for first in firsts]),
                WebhookDelivery.replay_of.is_not(None),
            )
            .order_by(WebhookDelivery.created_at, WebhookDelivery.id)
        )
        for row in rows:
            replays.setdefault(row.event_id, []).append(row)
    return [WebhookEvent([first, *replays.get(first.event_id, [])]) for first in firsts]


async def list_events(
    session: AsyncSession, webhook_id: int, page: PageRequest
) -> Page[WebhookEvent]:
    """The webhook's events, newest first; ``after``/``before`` name event ids."""
    if page.cursor is not None:
        anchor = await _first_delivery(session, webhook_id, page.cursor)
        if anchor is None:
            raise ValidationError(f"Invalid cursor `{page.cursor}`: no such object in this list.")
        if page.after is not None:
            page = replace(page, after=anchor.id)
        else:
            page = replace(page, before=anchor.id)
    query = select(WebhookDelivery).where(
        WebhookDelivery.webhook_id == webhook_id, WebhookDelivery.replay_of.is_(None)
    )
    firsts = await paginate(session, query, WebhookDelivery, page)
    return Page(await _events(session, webhook_id, firsts.items), firsts.has_more)


async def get_event(session: AsyncSession, webhook_id: int, event_id: str) -> WebhookEvent:
    first = await _first_delivery(session, webhook_id, event_id)
    if first is None:
        raise NotFound("Webhook event not found.")
    [event] = await _events(session, webhook_id, [first])
    return event


def attempts_of(event: WebhookEvent) -> list[Attempt]:
    """Every attempt at delivering ``event``, newest first."""
    found = [
        Attempt(str(uuid.uuid5(uuid.UUID(delivery.id), str(number))), delivery.id, number, entry)
        for delivery in event.deliveries
        for number, entry in enumerate(delivery.attempt_log or [], start=1)
    ]
    found.reverse()
    return found


def page_of_attempts(attempts: list[Attempt], page: PageRequest) -> Page[Attempt]:
    """A page of ``attempts`` (newest first, at most 8 a delivery: read whole)."""
    return page_in_memory(attempts, page, lambda attempt: attempt.id)


async def replay_event(
    session: AsyncSession, clock: Clock, webhook: Webhook, event_id: str
) -> WebhookEvent:
    """The event delivered once more (a new delivery of the same body and event id)."""
    event = await get_event(session, webhook.id, event_id)
    await replay_delivery(session, clock, webhook, event.latest.id)
    return await get_event(session, webhook.id, event_id)


def _created_at(event: WebhookEvent) -> str | None:
    """When the event happened (its payload's time; the delivery was queued after)."""
    try:
        created = json.loads(event.first.body).get("created_at")
    except (ValueError, AttributeError):
        created = None
    return created if isinstance(created, str) else isoformat_ms(event.first.created_at)


def event_summary_view(event: WebhookEvent) -> dict[str, Any]:
    return {
        "object": "webhook_event",
        "id": event.first.event_id,
        "type": event.first.event_type,
        "status": event.status,
        "created_at": _created_at(event),
    }


def event_view(event: WebhookEvent) -> dict[str, Any]:
    latest = event.latest
    due = latest.due_at if latest.status == "pending" else None
    return {
        **event_summary_view(event),
        "next_attempt_at": isoformat_ms(due),
        "deliveries": [delivery.id for delivery in event.deliveries],
        "payload": json.loads(event.first.body),
    }


def attempt_view(attempt: Attempt) -> dict[str, Any]:
    entry = attempt.entry
    return {
        "object": "webhook_event_attempt",
        "id": attempt.id,
        "delivery_id": attempt.delivery_id,
        "attempt": attempt.number,
        "http_status_code": entry.get("status_code"),
        "response": entry.get("error") or "",
        "duration_ms": entry.get("duration_ms"),
        "sent_at": entry.get("at"),
    }
