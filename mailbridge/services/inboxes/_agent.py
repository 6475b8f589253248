"""An inbox's agent settings: instructions, a tone and the actions it may take.

Stored and answered as the SDKs shape them (``object: inbox_agent``);
``agent_url_configured`` says whether an agent is called. What acts on them — each new
message offered to the classifier at ``MAILBRIDGE_INBOX_AGENT_URL`` and the allowed
actions applied (a reply only ever as a draft) — is ``_agent_calls``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ValidationError
from mailbridge.storage.tables import Inbox

ACTIONS = (
    "draft_reply", "forward_thread", "add_labels", "assign_thread", "mark_as_spam", "archive",
    "move_to_trash",
)  # fmt: skip
TONES = ("concise_professional", "concise_casual", "expanded_professional", "expanded_casual")
MAX_INSTRUCTIONS = 10_000


def agent_view(inbox: Inbox, *, configured: bool) -> dict[str, Any]:
    return {
        "object": "inbox_agent",
        "instructions": inbox.agent_instructions,
        "tone": inbox.agent_tone,
        "actions": list(inbox.agent_actions or []),
        "agent_url_configured": configured,
    }


async def update_agent(
    session: AsyncSession, clock: Clock, inbox: Inbox, changes: Mapping[str, Any]
) -> Inbox:
    """Change any of ``instructions``, ``tone``, ``actions`` (at least one)."""
    if not any(field in changes for field in ("instructions", "tone", "actions")):
        raise ValidationError("Give `instructions`, `tone` or `actions`.")
    if "instructions" in changes:
        text = changes["instructions"]
        if text is not None and (not isinstance(text, str) or len(text) > MAX_INSTRUCTIONS):
            raise ValidationError(
                f"`instructions` must be text of at most {MAX_INSTRUCTIONS} characters."
            )
        inbox.agent_instructions = text or None
    if "tone" in changes:
        tone = changes["tone"]
        if tone is not None and tone not in TONES:
            raise ValidationError(f"`tone` must be one of {', '.join(TONES)}.")
        inbox.agent_tone = tone
    if "actions" in changes:
        actions = changes["actions"]
        if not isinstance(actions, list) or not all(each in ACTIONS for each in actions):
            raise ValidationError(f"`actions` must be a list of {', '.join(ACTIONS)}.")
        inbox.agent_actions = list(dict.fromkeys(actions))
    inbox.updated_at = clock.now()
    await session.commit()
    return inbox
