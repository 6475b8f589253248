"""An inbox agent's answer applied through the port inbox steps act through.

The agent (``services.inboxes``' agent calls; the runner's agent worker POSTs) answers a
list of actions. Each is checked against the inbox's allowed actions as they are now
(``inboxes.checked_action``), then done by :class:`~._backend.SQLInboxes` with
``source="agent"`` — the same code an automation's ``add_labels`` or ``draft_reply``
step runs, so a draft is only ever a draft and a forward's email goes through the send
path's checks. The actions, the forward's email and the call marked done commit in one
transaction: an answer is applied once, or not at all (a runner that lost the call's
lease applies nothing).
"""

from __future__ import annotations

from typing import Any

from mailbridge.services import domains, inboxes
from mailbridge.services.automations._backend import SQLInboxes
from mailbridge.services.automations._mailer import SQLMailer
from mailbridge.services.kernel import ServiceContext


async def apply_agent_answer(
    context: ServiceContext, call_id: str, owner: str, actions: list[Any]
) -> dict[str, Any] | None:
    """Apply the answer to call ``call_id`` held by ``owner``; what was applied and
    refused, or None when the call is no longer ``owner``'s."""
    async with context.database.session() as session:
        taken = await inboxes.take_agent_call(session, call_id, owner)
        if taken is None:
            return None
        call, allowed = taken
        mailer = SQLMailer(session, context)
        port = SQLInboxes(session, context, mailer, source="agent")
        team_domains = set(await domains.sending_domain_names(session, call.team_id))
        applied: list[str] = []
        refused: list[dict[str, str]] = []
        for index, action in enumerate(actions):
            kind = str(action.get("type"))[:50] if isinstance(action, dict) else "?"
            if index >= inboxes.MAX_ACTIONS:
                refused.append({"type": kind, "reason": "past the most actions one answer takes"})
                continue
            checked = inboxes.checked_action(action, allowed, team_domains)
            if isinstance(checked, str):
                refused.append({"type": kind, "reason": checked})
                continue
            kind, options = checked
            options["key"] = f"agent:{call.id}:{index}"
            problem = await port.act(call.team_id, call.thread_id, kind, options)
            if problem is None:
                applied.append(kind)
            else:
                refused.append({"type": kind, "reason": problem})
        mailed = await mailer.flush()
        outcome = {"applied": applied, "refused": refused}
        inboxes.finish_agent_call(call, context.clock, outcome)
        await session.commit()
    if mailed:
        context.work_added("delivery")
    return outcome
