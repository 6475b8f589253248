"""The domain of an automation created without one (as Resend's SDKs create them).

Spec §2.2 gives every automation a ``domain``: the one its send steps send from and
whose events start it. A body that names none gets the domain its send steps' ``from``
addresses (or their templates') are on; when no step has a sender, the team's only
domain that may send. When neither decides, 422 names both ways to give it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.mail.addresses import domain_of
from mailbridge.services import domains
from mailbridge.services.automations._references import (
    load_references,
    step_config,
)

GIVE_IT = (
    "give `domain` (a verified domain of this account), or a `from` address on one "
    "verified domain in the send_email steps or their templates"
)


def _senders(steps: object, templates: dict[str, Any]) -> set[str]:
    """The domains the send steps of raw public ``steps`` send from, where they say."""
    found: set[str] = set()
    for step in steps if isinstance(steps, list) else ():
        if not isinstance(step, dict) or step.get("type") != "send_email":
            continue
        config = step_config(step)
        sender = config.get("from")
        if not isinstance(sender, str) or "@" not in sender:
            template = config.get("template")
            name = template.get("id") if isinstance(template, dict) else None
            published = templates.get(name) if isinstance(name, str) else None
            sender = published.from_address if published is not None else None
        if isinstance(sender, str) and "@" in sender:
            found.add(domain_of(sender.strip().rstrip(">")))
    return found


async def derived_domain(session: AsyncSession, team_id: str, steps: object) -> str:
    """The domain an automation without ``domain`` sends from (see the module)."""
    references = await load_references(session, team_id, None, steps)
    senders = _senders(steps, references.templates)
    if len(senders) > 1:
        raise ValidationError(
            "The send_email steps send from more than one domain "
            f"({', '.join(sorted(senders))}); an automation sends from one: " + GIVE_IT + "."
        )
    if senders:
        sender = senders.pop()
        if await domains.sending_domain(session, team_id, sender) is None:
            raise ValidationError(
                f"The send_email steps send from {sender}, which is not a domain of this "
                "account that may send: verify it first, or " + GIVE_IT + "."
            )
        return sender
    sending = await domains.sending_domain_names(session, team_id)
    if len(sending) == 1:
        return sending[0]
    which = "no verified domain" if not sending else f"{len(sending)} verified domains"
    raise ValidationError(
        f"`domain` is missing and this account has {which} to take it from: " + GIVE_IT + "."
    )
