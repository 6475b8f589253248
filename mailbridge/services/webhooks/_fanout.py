"""Webhook fan-out: the activity consumer that turns events into webhook deliveries.

For a batch of events it reads the enabled webhooks of the teams concerned (one
query) and adds one ``webhook_deliveries`` row, due now, per event and subscribed
webhook, in the dispatcher's transaction; an event about an email is in that email's
sequence (delivered in order, ``_deliveries``). The body is serialized here, once per event:
``{"type", "created_at", "data"}`` — the exact bytes every attempt, retry and replay
sends and signs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ActivityEvent, Webhook, WebhookDelivery
from mailbridge.storage.types import new_id


def event_body(event: ActivityEvent) -> str:
    """What a webhook receives for ``event`` (spec §6.1: the name in ``type``)."""
    payload = {"type": event.type, "created_at": isoformat_ms(event.created_at), "data": event.data}
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


class WebhookFanout:
    name = "webhooks"

    def __init__(self, on_added: Callable[[], None] | None = None) -> None:
        self.on_added = on_added
        self._added = 0

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        self._added = 0
        teams = {event.team_id for event in events}
        hooks = await session.execute(
            select(Webhook.id, Webhook.team_id, Webhook.events).where(
                Webhook.team_id.in_(teams), Webhook.status == "enabled"
            )
        )
        subscribed: dict[tuple[str, str], list[int]] = defaultdict(list)
        for hook_id, team_id, names in hooks.tuples():
            for name in names:
                subscribed[team_id, name].append(hook_id)
        if not subscribed:
            return
        now = context.clock.now()
        rows: list[dict[str, Any]] = []
        for event in events:
            hook_ids = subscribed.get((event.team_id, event.type))
            if not hook_ids:
                continue
            body = event_body(event)
            email_id = event.data.get("email_id") if isinstance(event.data, dict) else None
            sequence = f"email:{email_id}" if isinstance(email_id, str) else None
            rows.extend(
                {
                    "id": new_id(),
                    "webhook_id": hook_id,
                    "event_id": event.id,
                    "event_type": event.type,
                    "body": body,
                    "status": "pending",
                    "attempts": 0,
                    "attempt_log": [],
                    "due_at": now,
                    "sequence_key": sequence,
                    "created_at": now,
                    "updated_at": now,
                }
                for hook_id in hook_ids
            )
        if rows:
            await session.execute(insert(WebhookDelivery), rows)
        self._added = len(rows)

    def dispatched(self) -> None:
        if self._added and self.on_added is not None:
            self.on_added()
        self._added = 0
