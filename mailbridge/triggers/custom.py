"""Custom events: what a program tells mailbridge happened to a contact (``POST
/events/send``) starts and resumes runs.

The automations context's ``send_event`` (its SQL half) reads the request, opens the
engine's transaction (scoped to the key's domain) and calls this module, which holds the
rules of intake, in the order they are checked:

1. :func:`custom_event_name` — the name, stripped; names under :data:`BUILT_IN_PREFIXES`
   are mailbridge's own events, which only mailbridge emits;
2. :func:`emit_custom_event` — the payload against the team's definition of the event,
   if it has one, and the named contact, through the :class:`CustomEventChecks` port;
   then ``Engine.emit_in``. A start past the team's run quota refuses the whole event
   (``automation_quota_exceeded``): the caller rolls back, so nothing was started.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mailbridge.engine.engine import Emitted, Engine
from mailbridge.engine.ports import Event, RunQuotaExceeded, Transaction
from mailbridge.errors import AutomationQuotaExceeded, ValidationError

# The service's own events (every family of the webhook events, and templates').
BUILT_IN_PREFIXES = (
    "email.", "contact.", "domain.", "automation.", "campaign.", "template.", "poll.",
    "inbox.",
)  # fmt: skip


class CustomEventChecks(Protocol):
    """What intake looks up about a sent event (the automations context: its tables)."""

    async def payload_problems(
        self, team_id: str, name: str, payload: Mapping[str, Any]
    ) -> list[str]:
        """What is wrong with ``payload`` under the team's definition of the event ``name``,
        one line each (empty: fine, or no definition)."""
        ...

    async def contact_exists(self, team_id: str, contact_id: str) -> bool:
        """Whether the team has a contact with this id (any string may be asked)."""
        ...


def custom_event_name(event: str) -> str:
    """The name a sent event goes by; a built-in event's is refused."""
    name = event.strip()
    if name.startswith(BUILT_IN_PREFIXES):
        raise ValidationError(f"`{name}` is a built-in event; mailbridge emits it itself.")
    return name


async def emit_custom_event(
    engine: Engine, tx: Transaction, checks: CustomEventChecks, event: Event
) -> Emitted:
    """Check ``event`` (named by :func:`custom_event_name`) and start and resume its runs
    in ``tx``; the caller commits, or rolls back on an error."""
    problems = await checks.payload_problems(event.team_id, event.name, event.payload)
    if problems:
        raise ValidationError("payload: " + "; ".join(problems))
    if event.contact_id is not None and not await checks.contact_exists(
        event.team_id, event.contact_id
    ):
        raise ValidationError(f"No contact with id {event.contact_id}.")
    try:
        return await engine.emit_in(tx, event)
    except RunQuotaExceeded as refusal:
        raise AutomationQuotaExceeded(f"{refusal} on this plan; nothing was started.") from refusal
