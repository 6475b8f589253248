"""Record what happened, in the same transaction as the change itself.

Activity events feed webhooks, automation triggers, logs and engagement segments;
they are rows first, so a crash never loses one that its change committed.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.storage.tables import ActivityEvent


def record_event(
    session: AsyncSession, clock: Clock, team_id: str, type: str, data: dict[str, Any],
    *, scope_domain: str | None = None,
) -> ActivityEvent:  # fmt: skip
    """Add an event to ``session`` (the caller commits it with its change). ``scope_domain``:
    caused by a key limited to that domain, so it triggers only that domain's automations."""
    event = ActivityEvent(
        team_id=team_id, type=type, data=data, created_at=clock.now(), scope_domain=scope_domain
    )
    session.add(event)
    return event
