"""The inbox agent's queue: each new received message of an inbox whose agent may act is
offered to the classifier at ``MAILBRIDGE_INBOX_AGENT_URL``.

The filer adds an ``inbox_agent_calls`` row in the transaction that files the message
(:func:`offer_to_agent`), so no message is offered twice or forgotten. The runner's
agent worker claims due calls (a lease, as webhook deliveries are claimed), POSTs each
request — built at the claim from the inbox's settings, the thread and the message
(:func:`agent_request`) and signed as a webhook is — and applies the answer through the
automations' inbox port, with the call marked done in that same transaction. A failed
POST is tried again after :data:`AGENT_RETRY_POLICY`'s delays, then the call fails.

The answer is ``{"actions": [{"type": ..., ...}]}``. Each action is checked here
(:func:`checked_action`) against the inbox's allowed actions as they are when it is
applied: a reply is only ever a draft (``draft_reply``), and a forward goes only to
addresses on the team's own domains — what a stranger's mail talks the agent into stays
inside the team.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.mail.addresses import domain_of, parse_recipient
from mailbridge.services.delivery import RetryPolicy
from mailbridge.services.inboxes._agent import ACTIONS
from mailbridge.services.inboxes._labels import labels_of, list_labels
from mailbridge.services.inboxes._threads import message_views, thread_summary
from mailbridge.storage.database import Database
from mailbridge.storage.queries import locked
from mailbridge.storage.tables import Inbox, InboxAgentCall, InboxMessage, InboxThread

AGENT_RETRY_POLICY = RetryPolicy(
    tuple(timedelta(seconds=seconds) for seconds in (5, 60, 5 * 60, 30 * 60, 2 * 3600))
)
MAX_ACTIONS = 20  # of one answer; the rest are refused
MAX_BODY_TEXT = 100_000  # characters of a message's text and html sent to the agent
MAX_FORWARD_TO = 10
MAX_DRAFT_TEXT = 100_000
REQUEST_TYPE = "inbox.agent.request"


def agent_asked(inbox: Inbox, *, configured: bool) -> bool:
    """Whether a new message of ``inbox`` is offered to the agent."""
    return configured and bool(inbox.agent_actions)


def offer_to_agent(
    session: AsyncSession, clock: Clock, inbox: Inbox, message: InboxMessage
) -> None:
    now = clock.now()
    session.add(
        InboxAgentCall(
            team_id=inbox.team_id, inbox_id=inbox.id, thread_id=message.thread_id,
            email_id=message.id,
            status="pending", attempts=0, due_at=now, created_at=now, updated_at=now,
        )
    )  # fmt: skip


@dataclass(frozen=True)
class AgentRequest:
    """A claimed call: what to POST, and what the answer applies to."""

    call_id: str  # the request's event id too, the same on every try
    body: str  # the JSON request


async def next_agent_call_due(session: AsyncSession, now: datetime) -> datetime | None:
    """When the earliest pending call falls due (a lapsed lease counts as due now)."""
    due: datetime | None = await session.scalar(
        select(InboxAgentCall.due_at)
        .where(
            InboxAgentCall.status == "pending",
            or_(InboxAgentCall.lease_until.is_(None), InboxAgentCall.lease_until < now),
        )
        .order_by(InboxAgentCall.due_at)
        .limit(1)
    )
    return due


async def claim_agent_calls(
    database: Database, clock: Clock, owner: str, lease: timedelta, limit: int
) -> list[AgentRequest]:
    """Lease up to ``limit`` due calls to ``owner`` and build their requests."""
    now = clock.now()
    async with database.session() as session:
        query = (
            select(InboxAgentCall)
            .where(
                InboxAgentCall.status == "pending",
                InboxAgentCall.due_at <= now,
                or_(InboxAgentCall.lease_until.is_(None), InboxAgentCall.lease_until < now),
            )
            .order_by(InboxAgentCall.due_at, InboxAgentCall.id)
            .limit(limit)
        )
        calls = list((await session.scalars(locked(query, session, skip_locked=True))).all())
        requests = []
        for call in calls:
            call.leased_by, call.lease_until = owner, now + lease
            body = await agent_request(session, call, now)
            requests.append(AgentRequest(call.id, body))
        await session.commit()
    return requests


def _clipped(value: Any) -> Any:
    return value[:MAX_BODY_TEXT] if isinstance(value, str) else value


async def agent_request(session: AsyncSession, call: InboxAgentCall, now: datetime) -> str:
    """The JSON the agent is sent: the inbox and its agent settings, the thread, the
    message (its text and html clipped), and the inbox's labels."""
    inbox = await session.get(Inbox, call.inbox_id)
    thread = await session.get(InboxThread, call.thread_id)
    message = await session.get(InboxMessage, call.email_id)
    assert inbox is not None and thread is not None  # a call goes with its thread
    email = (await message_views(session, [message]))[message.id] if message else None
    if email is not None:
        email = {key: _clipped(value) for key, value in email.items()}
    labels = (await labels_of(session, [thread.id]))[thread.id]
    data = {
        "inbox": {"id": inbox.id, "email_address": inbox.email_address, "name": inbox.name},
        "agent": {
            "instructions": inbox.agent_instructions, "tone": inbox.agent_tone,
            "actions": list(inbox.agent_actions or []),
        },
        "thread": {**thread_summary(thread, labels), "email_count": thread.email_count},
        "email": email,
        "labels": [label.name for label in await list_labels(session, inbox)],
    }  # fmt: skip
    return json.dumps(
        {"type": REQUEST_TYPE, "created_at": isoformat_ms(now), "data": data},
        separators=(",", ":"),
    )


def parse_answer(raw: bytes) -> list[Any]:
    """The actions of an answer; ValueError when it is not ``{"actions": [...]}``."""
    try:
        answer = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ValueError("the answer is not JSON") from None
    actions = answer.get("actions") if isinstance(answer, dict) else None
    if not isinstance(actions, list):
        raise ValueError('the answer is not {"actions": [...]}')
    return actions


def _strings(value: Any, most: int) -> list[str] | None:
    if not isinstance(value, list) or not 1 <= len(value) <= most:
        return None
    if not all(isinstance(each, str) and each.strip() for each in value):
        return None
    return [each.strip() for each in value]


def checked_action(
    action: Any, allowed: Sequence[str], team_domains: set[str]
) -> tuple[str, dict[str, Any]] | str:
    """An answer's action as ``(kind, options)`` for the inbox port, or why it is refused."""
    if not isinstance(action, Mapping) or not isinstance(action.get("type"), str):
        return "an action is an object with a `type`"
    kind = str(action["type"])
    if kind not in ACTIONS:
        return f"{kind[:50]!r} is not an inbox action"
    if kind not in allowed:
        return f"{kind} is not among the inbox agent's allowed actions"
    if kind == "add_labels":
        labels = _strings(action.get("labels"), 10)
        return ("add_labels", {"labels": labels}) if labels else "`labels`: 1 to 10 names"
    if kind == "assign_thread":
        member = action.get("assignee")
        return ("assign_thread", {"assignee": member}) if isinstance(member, str) else (
            "`assignee`: a member's email"
        )  # fmt: skip
    if kind == "draft_reply":
        content = {
            field: action[field][:MAX_DRAFT_TEXT]
            for field in ("subject", "text", "html")
            if isinstance(action.get(field), str)
        }
        if not content.get("text") and not content.get("html"):
            return "a draft needs `text` or `html`"
        return ("draft_reply", {field: content.get(field) for field in ("subject", "text", "html")})
    if kind == "forward_thread":
        to = _strings(action.get("to"), MAX_FORWARD_TO)
        if to is None:
            return f"`to`: 1 to {MAX_FORWARD_TO} addresses"
        outside = [
            each for each in to if domain_of(parse_recipient(each) or each) not in team_domains
        ]
        if outside:
            return f"the agent forwards only to the team's own domains, not {outside[0][:100]}"
        note = action.get("text")
        return ("forward_thread", {"to": to, "text": note if isinstance(note, str) else None})
    return (kind, {})


async def take_agent_call(
    session: AsyncSession, call_id: str, owner: str
) -> tuple[InboxAgentCall, list[str]] | None:
    """The call, locked, while ``owner`` still holds it, with its inbox's allowed actions
    as they are now; None when its lease went to another runner."""
    query = select(InboxAgentCall).where(
        InboxAgentCall.id == call_id,
        InboxAgentCall.leased_by == owner,
        InboxAgentCall.status == "pending",
    )
    call = await session.scalar(locked(query, session))
    if call is None:
        return None
    inbox = await session.get(Inbox, call.inbox_id)
    return call, list(inbox.agent_actions or []) if inbox is not None else []


def finish_agent_call(
    call: InboxAgentCall, clock: Clock, outcome: dict[str, Any] | None, error: str | None = None
) -> None:
    call.status = "failed" if error is not None else "done"
    call.attempts += 1
    call.outcome, call.error = outcome, error
    call.leased_by = call.lease_until = None
    call.updated_at = clock.now()


async def agent_call_failed(
    database: Database, clock: Clock, call_id: str, owner: str, error: str, *, final: bool
) -> None:
    """An attempt failed: due again after the policy's delay, or failed for good."""
    now = clock.now()
    async with database.session() as session:
        taken = await take_agent_call(session, call_id, owner)
        if taken is None:
            return
        call, _allowed = taken
        delay = None if final else AGENT_RETRY_POLICY.delay_after(call.attempts + 1)
        if delay is None:
            finish_agent_call(call, clock, None, error[:1000])
        else:
            call.attempts += 1
            call.due_at, call.error, call.updated_at = now + delay, error[:1000], now
            call.leased_by = call.lease_until = None
        await session.commit()


async def release_agent_calls(database: Database, owner: str) -> None:
    """Give back the leases ``owner`` still holds (a runner stopping)."""
    async with database.session() as session:
        await session.execute(
            update(InboxAgentCall)
            .where(InboxAgentCall.leased_by == owner, InboxAgentCall.status == "pending")
            .values(leased_by=None, lease_until=None)
        )
        await session.commit()


async def agent_calls_of(
    session: AsyncSession, team_id: str, thread_id: str
) -> list[InboxAgentCall]:
    """The team's thread's calls, oldest first (the dashboard shows what the agent did)."""
    rows = await session.scalars(
        select(InboxAgentCall)
        .where(InboxAgentCall.thread_id == thread_id, InboxAgentCall.team_id == team_id)
        .order_by(InboxAgentCall.created_at, InboxAgentCall.id)
    )
    return list(rows.all())
