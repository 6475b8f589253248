"""The webhook delivery queue: claims under a lease, recorded attempts, retries, replays.

A delivery is one event for one webhook (added by ``services.webhook_fanout``). It is
due when ``due_at <= now``. A claim takes a batch in one statement — ``UPDATE ...
WHERE id IN (SELECT ... ORDER BY due_at LIMIT n) RETURNING``, with ``FOR UPDATE SKIP
LOCKED`` on PostgreSQL so concurrent runners take disjoint batches; on SQLite the
statement is one write transaction — and moves ``due_at`` to the end of the lease:
a runner that dies holding it gives it back by simply not answering in time.

Order: deliveries with the same ``sequence_key`` (an email's events, ``email:<email
id>``) to one webhook go out one at a time, in the order of their events: a later one is
not claimed while an earlier one is pending, in flight or waiting for a retry — only
once it succeeded or was given up (failed). Different emails, and events of no email,
stay parallel. A replay has no sequence: it goes out at once.

After an attempt (:func:`record_outcomes`, many at once): a 2xx ends the delivery
``succeeded``; anything else is retried after the next delay of :data:`WEBHOOK_RETRY_POLICY`
(about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), and past the last one the delivery
is ``failed``. An outcome is written only while its runner still holds the lease.

The webhook's health follows: its first failed attempt since a success is
``failing_since``; a success clears it. A webhook that keeps failing for
``disable_after`` is disabled (with the reason) and its queued deliveries fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, bindparam, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.delivery import RetryPolicy
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid, locked, table_of
from mailbridge.storage.tables import Webhook, WebhookDelivery
from mailbridge.storage.types import new_id

# Eight attempts over about 27.5 hours.
WEBHOOK_RETRY_POLICY = RetryPolicy(
    tuple(
        timedelta(seconds=seconds)
        for seconds in (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600)
    )
)
STATUSES = ("pending", "succeeded", "failed")
MAX_ERROR_LENGTH = 500


@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery leased to a runner, with what the attempt needs from its webhook."""

    id: str
    webhook_id: int
    event_id: str
    event_type: str
    body: str
    attempts: int  # this attempt included
    attempt_log: list[dict[str, Any]]
    endpoint: str
    secret: str
    webhook_enabled: bool
    previous_secret: str | None = None  # a rotation's overlap: it signs too
    sequence_key: str | None = None  # later deliveries of the sequence wait for this one


@dataclass(frozen=True)
class DeliveryOutcome:
    """What one attempt came to."""

    delivery: ClaimedDelivery
    attempted_at: datetime
    status_code: int | None
    duration_ms: int
    error: str | None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    def log_entry(self) -> dict[str, Any]:
        return {
            "at": isoformat_ms(self.attempted_at),
            "status_code": self.status_code,
            "duration_ms": self.duration_ms,
            "error": self.error,
        }


# --- claiming ------------------------------------------------------------------------


def _first_of_its_sequence() -> ColumnElement[bool]:
    """No earlier delivery of the same sequence (to the same webhook) is still pending or
    in flight: an email's later event waits until the earlier ones are delivered or given
    up; deliveries of other emails, or with no sequence, never wait."""
    earlier = aliased(WebhookDelivery)
    return ~exists().where(
        earlier.webhook_id == WebhookDelivery.webhook_id,
        earlier.sequence_key == WebhookDelivery.sequence_key,
        earlier.due_at.is_not(None),
        earlier.event_id < WebhookDelivery.event_id,
    )


async def claim_due_deliveries(
    session: AsyncSession, now: datetime, owner: str, lease: timedelta, limit: int
) -> list[ClaimedDelivery]:
    """Lease up to ``limit`` due deliveries to ``owner`` (the caller commits)."""
    due = (
        select(WebhookDelivery.id)
        .where(WebhookDelivery.due_at <= now, _first_of_its_sequence())
        .order_by(WebhookDelivery.due_at)
        .limit(limit)
    )
    due = locked(due, session, skip_locked=True)
    table = table_of(WebhookDelivery)
    claimed = (
        await session.execute(
            update(table)
            .where(table.c.id.in_(due.scalar_subquery()))
            .values(due_at=now + lease, lease_owner=owner, attempts=table.c.attempts + 1)
            .returning(
                table.c.id,
                table.c.webhook_id,
                table.c.event_id,
                table.c.event_type,
                table.c.body,
                table.c.attempts,
                table.c.attempt_log,
                table.c.sequence_key,
            )
        )
    ).all()
    if not claimed:
        return []
    hooks = {
        row.id: row
        for row in await session.execute(
            select(
                Webhook.id,
                Webhook.endpoint,
                Webhook.secret,
                Webhook.status,
                Webhook.previous_secret,
                Webhook.previous_secret_until,
            ).where(Webhook.id.in_({row.webhook_id for row in claimed}))
        )
    }
    deliveries = []
    for row in sorted(claimed, key=lambda row: row.id):
        hook = hooks.get(row.webhook_id)
        if hook is None:  # deleted meanwhile; its deliveries went with it
            continue
        deliveries.append(
            ClaimedDelivery(
                row.id,
                row.webhook_id,
                row.event_id,
                row.event_type,
                row.body,
                row.attempts,
                list(row.attempt_log or []),
                hook.endpoint,
                hook.secret,
                hook.status == "enabled",
                _previous_secret(hook.previous_secret, hook.previous_secret_until, now),
                row.sequence_key,
            )
        )
    return deliveries


def _previous_secret(secret: str | None, until: datetime | None, now: datetime) -> str | None:
    return secret if secret is not None and until is not None and until > now else None


async def next_delivery_due_at(session: AsyncSession) -> datetime | None:
    """When the earliest delivery comes due, a lease's end included (read-only, due index);
    one waiting for an earlier one of its sequence is not due before that is over."""
    query = (
        select(WebhookDelivery.due_at)
        .where(WebhookDelivery.due_at.is_not(None), _first_of_its_sequence())
        .order_by(WebhookDelivery.due_at)
        .limit(1)
    )
    due: datetime | None = await session.scalar(query)
    return due


async def release_deliveries(session: AsyncSession, owner: str, now: datetime) -> int:
    """Give back what ``owner`` still holds (a graceful stop): due at once, the attempt
    that never finished not counted."""
    table = table_of(WebhookDelivery)
    result = await session.execute(
        update(table)
        .where(table.c.lease_owner == owner, table.c.due_at.is_not(None))
        .values(due_at=now, lease_owner=None, attempts=table.c.attempts - 1)
    )
    return int(getattr(result, "rowcount", 0) or 0)


# --- recording -----------------------------------------------------------------------


def _truncate(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_ERROR_LENGTH:
        return text
    return text[: MAX_ERROR_LENGTH - 1] + "…"


async def record_outcomes(
    session: AsyncSession,
    now: datetime,
    owner: str,
    outcomes: Sequence[DeliveryOutcome],
    *,
    retry_policy: RetryPolicy = WEBHOOK_RETRY_POLICY,
    disable_after: timedelta,
) -> list[int]:
    """Write a group of attempts' outcomes and their webhooks' health (the caller commits);
    the ids of the webhooks this disabled."""
    if not outcomes:
        return []
    table = table_of(WebhookDelivery)
    statement = (
        update(table)
        .where(table.c.id == bindparam("b_id"), table.c.lease_owner == owner)
        .values(
            status=bindparam("b_status"),
            due_at=bindparam("b_due_at"),
            lease_owner=None,
            attempt_log=bindparam("b_log"),
            last_error=bindparam("b_error"),
            updated_at=now,
            completed_at=bindparam("b_completed_at"),
        )
    )
    disabled = await _update_health(session, now, outcomes, disable_after)
    # A failure is retried only while its webhook is enabled — now, not when it was claimed.
    failed_hooks = {o.delivery.webhook_id for o in outcomes if not o.succeeded}
    enabled: set[int] = set()
    if failed_hooks:
        enabled = set(
            await session.scalars(
                select(Webhook.id).where(Webhook.id.in_(failed_hooks), Webhook.status == "enabled")
            )
        )
    rows = []
    for outcome in outcomes:
        delivery = outcome.delivery
        delay = None
        if not outcome.succeeded and delivery.webhook_id in enabled:
            delay = retry_policy.delay_after(delivery.attempts)
        if outcome.succeeded:
            status, due_at, completed_at = "succeeded", None, now
        elif delay is not None:
            status, due_at, completed_at = "pending", outcome.attempted_at + delay, None
        else:
            status, due_at, completed_at = "failed", None, now
        rows.append({
            "b_id": delivery.id, "b_status": status, "b_due_at": due_at,
            "b_log": [*delivery.attempt_log, outcome.log_entry()],
            "b_error": _truncate(outcome.error), "b_completed_at": completed_at,
        })  # fmt: skip
    await session.execute(statement, rows)
    if disabled:
        await abandon_pending(session, disabled, now, "webhook disabled")
    return disabled


async def _update_health(
    session: AsyncSession,
    now: datetime,
    outcomes: Sequence[DeliveryOutcome],
    disable_after: timedelta,
) -> list[int]:
    succeeded = {o.delivery.webhook_id for o in outcomes if o.succeeded}
    first_failure: dict[int, DeliveryOutcome] = {}
    for outcome in outcomes:
        hook = outcome.delivery.webhook_id
        if not outcome.succeeded and hook not in succeeded and hook not in first_failure:
            first_failure[hook] = outcome
    if succeeded:
        # Matches no row in the common case, and so locks none.
        await session.execute(
            update(Webhook)
            .where(Webhook.id.in_(succeeded), Webhook.failing_since.is_not(None))
            .values(failing_since=None)
        )
    if not first_failure:
        return []
    # The group's earliest failure stands for each webhook's (they are moments apart).
    since = min(o.attempted_at for o in first_failure.values())
    await session.execute(
        update(Webhook)
        .where(Webhook.id.in_(first_failure), Webhook.failing_since.is_(None))
        .values(failing_since=since)
    )
    failing = await session.execute(
        select(Webhook.id, Webhook.failing_since).where(
            Webhook.id.in_(first_failure),
            Webhook.status == "enabled",
            Webhook.failing_since <= now - disable_after,
        )
    )
    disabled = []
    for hook_id, failing_since in failing.tuples():
        last = first_failure[hook_id]
        reason = (
            f"Disabled at {isoformat_ms(now)}: every attempt since "
            f"{isoformat_ms(failing_since)} failed (last: {last.error})."
        )
        await session.execute(
            update(Webhook)
            .where(Webhook.id == hook_id)
            .values(status="disabled", disabled_reason=_truncate(reason), updated_at=now)
        )
        disabled.append(hook_id)
    return disabled


async def abandon_pending(
    session: AsyncSession, webhook_ids: Iterable[int], now: datetime, reason: str
) -> None:
    """Fail the queued deliveries of disabled webhooks (an attempt in flight still records
    its outcome)."""
    table = table_of(WebhookDelivery)
    await session.execute(
        update(table)
        .where(
            table.c.webhook_id.in_(list(webhook_ids)),
            table.c.due_at.is_not(None),
            table.c.lease_owner.is_(None),
        )
        .values(status="failed", due_at=None, last_error=reason, updated_at=now, completed_at=now)
    )


# --- reading and replaying -------------------------------------------------------------


async def list_deliveries(
    session: AsyncSession, webhook_id: int, page: PageRequest, status: str | None = None
) -> Page[WebhookDelivery]:
    query = select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id)
    if status is not None:
        if status not in STATUSES:
            raise ValidationError(f"`status` must be one of {', '.join(STATUSES)}.")
        query = query.where(WebhookDelivery.status == status)
    return await paginate(session, query, WebhookDelivery, page)


async def get_delivery(session: AsyncSession, webhook_id: int, delivery_id: str) -> WebhookDelivery:
    delivery = None
    if is_uuid(delivery_id):
        delivery = await session.scalar(
            select(WebhookDelivery).where(
                WebhookDelivery.id == delivery_id, WebhookDelivery.webhook_id == webhook_id
            )
        )
    if delivery is None:
        raise NotFound("Delivery not found.")
    return delivery


async def replay_delivery(
    session: AsyncSession, clock: Clock, webhook: Webhook, delivery_id: str
) -> WebhookDelivery:
    """Queue the same event (same body, same event id) to the webhook once more, as a new
    delivery due now; the original keeps its history."""
    original = await get_delivery(session, webhook.id, delivery_id)
    if webhook.status != "enabled":
        raise ValidationError("The webhook is disabled; enable it before replaying deliveries.")
    now = clock.now()
    replay = WebhookDelivery(
        id=new_id(), webhook_id=webhook.id, event_id=original.event_id,
        event_type=original.event_type, body=original.body, status="pending", attempts=0,
        attempt_log=[], due_at=now, replay_of=original.id, created_at=now, updated_at=now,
    )  # fmt: skip
    session.add(replay)
    await session.commit()
    return replay


def delivery_view(delivery: WebhookDelivery, *, with_payload: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "object": "webhook_delivery",
        "id": delivery.id,
        "webhook_id": str(delivery.webhook_id),
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempt_count": delivery.attempts,
        "next_attempt_at": isoformat_ms(delivery.due_at) if delivery.status == "pending" else None,
        "last_error": delivery.last_error,
        "replay_of": delivery.replay_of,
        "created_at": isoformat_ms(delivery.created_at),
        "completed_at": isoformat_ms(delivery.completed_at),
        "attempts": [
            {
                "attempt": number,
                "attempted_at": entry.get("at"),
                "status_code": entry.get("status_code"),
                "duration_ms": entry.get("duration_ms"),
                "error": entry.get("error"),
            }
            for number, entry in enumerate(delivery.attempt_log or [], start=1)
        ],
    }
    if with_payload:
        view["payload"] = json.loads(delivery.body)
    return view
