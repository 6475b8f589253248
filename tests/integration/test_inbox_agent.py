"""The inbox agent: each new message of an inbox whose agent may act is POSTed, signed,
to ``MAILBRIDGE_INBOX_AGENT_URL`` — here a fake agent on a real loopback HTTP server —
and the actions it answers are applied if the inbox allows each one: a reply only ever
as a draft, a forward only inside the team's domains."""

# ruff: noqa: F811  (the ``inbox`` fixture is test_inbound's, taken as a parameter)

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError
from sqlalchemy import select
from standardwebhooks import Webhook

from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.inbox_agent import InboxAgentWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks import default_consumers
from mailbridge.storage.tables import ActivityEvent, Email, InboxAgentCall, InboxDraft
from tests.integration.test_inbound import Inbox, dns, inbox, letter  # noqa: F401
from tests.integration.test_inboxes import SUPPORT, support_inbox, threads
from tests.webhook_receiver import Receiver, webhook_receiver

SECRET = "whsec_" + base64.b64encode(os.urandom(24)).decode()


def agent_context(inbox: Inbox, receiver: Receiver) -> ServiceContext:
    settings = inbox.context.settings.model_copy(
        update={"inbox_agent_url": receiver.url("/agent"), "inbox_agent_secret": SecretStr(SECRET)}
    )
    return ServiceContext(settings=settings, database=inbox.context.database, clock=FakeClock())


async def write(inbox: Inbox, context: ServiceContext, subject: str) -> None:
    """A customer writes to support@; the runner's dispatcher files it (``context``'s)."""
    message = letter(to=SUPPORT)
    del message["Subject"]
    message["Subject"] = subject
    await inbox.deliver(message, SUPPORT)
    await ActivityDispatcher(context, default_consumers(context)).dispatch_all()


async def allow(inbox: Inbox, *actions: str) -> None:
    changed = await inbox.client.patch(
        f"/inboxes/{SUPPORT}/agent",
        json={"instructions": "Label billing questions.", "tone": "concise_casual",
              "actions": list(actions)},
    )  # fmt: skip
    assert changed.status_code == 200, changed.text


def answering(*actions: dict[str, Any]) -> Callable[[dict[str, Any]], bytes]:
    return lambda _request: json.dumps({"actions": list(actions)}).encode()


async def calls(context: ServiceContext) -> list[InboxAgentCall]:
    async with context.database.session() as session:
        found = await session.scalars(select(InboxAgentCall).order_by(InboxAgentCall.created_at))
        return list(found.all())


async def test_the_agent_acts_only_as_the_inbox_allows(inbox: Inbox) -> None:
    await support_inbox(inbox)
    await allow(inbox, "add_labels", "draft_reply", "forward_thread")
    with webhook_receiver() as receiver:
        context = agent_context(inbox, receiver)
        receiver.responder = answering(
            {"type": "add_labels", "labels": ["Billing"]},
            {"type": "draft_reply", "subject": "Re: Invoice", "text": "We are on it."},
            {"type": "forward_thread", "to": ["billing@shop.io"], "text": "Yours."},
            {"type": "forward_thread", "to": ["drop@attacker.example"]},
            {"type": "assign_thread", "assignee": "someone@shop.io"},
            {"type": "send_reply", "text": "Sent straight away!"},
            {"type": "archive"},
        )
        await write(inbox, context, "Invoice 12 is wrong")
        assert await InboxAgentWorker(context).ask_due() == 1
        assert await InboxAgentWorker(context).ask_due() == 0  # asked once, applied once
        [request] = receiver.requests()

    # Signed as a webhook: spec §6.2's HMAC and Standard Webhooks' (the library checks).
    assert request.path == "/agent" and request.signed_with(SECRET)
    Webhook(SECRET).verify(request.body, request.headers)
    payload = request.payload
    assert payload["type"] == "inbox.agent.request"
    data = payload["data"]
    assert data["agent"] == {
        "instructions": "Label billing questions.", "tone": "concise_casual",
        "actions": ["add_labels", "draft_reply", "forward_thread"],
    }  # fmt: skip
    assert data["inbox"]["email_address"] == SUPPORT
    assert data["email"]["subject"] == "Invoice 12 is wrong" and data["email"]["text"]
    assert data["thread"]["labels"] == [] and data["thread"]["folder"] == "inbox"

    [thread] = await threads(inbox)
    assert [label["name"] for label in thread["labels"]] == ["Billing"]
    assert thread["has_draft"] is True and thread["folder"] == "inbox"
    async with context.database.session() as session:
        [draft] = (await session.scalars(select(InboxDraft))).all()
        emails = (await session.scalars(select(Email))).all()
        moved = await session.scalars(
            select(ActivityEvent).where(ActivityEvent.type == "inbox.thread.labels.updated")
        )
        [labelled] = moved.all()
    assert (draft.text, draft.email_id) == ("We are on it.", None)  # a draft, not sent
    assert [(email.to, email.subject) for email in emails] == [
        (["billing@shop.io"], "Fwd: Invoice 12 is wrong")
    ]
    assert labelled.data is not None and labelled.data["source"] == "agent"

    [call] = await calls(context)
    assert call.status == "done" and call.attempts == 1
    assert call.outcome is not None
    assert call.outcome["applied"] == ["add_labels", "draft_reply", "forward_thread"]
    reasons = {each["type"]: each["reason"] for each in call.outcome["refused"]}  # type: ignore[attr-defined]
    assert set(reasons) == {"forward_thread", "assign_thread", "send_reply", "archive"}
    assert "team's own domains" in reasons["forward_thread"]
    assert "not among" in reasons["assign_thread"] and "not among" in reasons["archive"]
    assert "not an inbox action" in reasons["send_reply"]


async def test_a_failing_agent_is_asked_again_and_a_nonsense_answer_is_not(
    inbox: Inbox,
) -> None:
    await support_inbox(inbox)
    await allow(inbox, "add_labels")
    with webhook_receiver() as receiver:
        context = agent_context(inbox, receiver)
        assert isinstance(context.clock, FakeClock)
        receiver.responder = answering({"type": "add_labels", "labels": ["Later"]})
        receiver.answer(503)
        await write(inbox, context, "First")
        worker = InboxAgentWorker(context)
        assert await worker.ask_due() == 1
        [call] = await calls(context)
        assert (call.status, call.attempts, call.error) == ("pending", 1, "the agent answered 503")
        assert await worker.ask_due() == 0  # not due yet
        context.clock.advance(timedelta(seconds=6))
        assert await worker.ask_due() == 1
        [call] = await calls(context)
        assert (call.status, call.attempts) == ("done", 2)
        [first, again] = receiver.requests()
        assert first.event_id == again.event_id == call.id  # the same id: a repeat, told so

        receiver.responder = lambda _request: b"<html>I am not an agent</html>"
        await write(inbox, context, "Second")
        assert await worker.ask_due() == 1
        second = (await calls(context))[-1]
        assert (second.status, second.error) == ("failed", "the answer is not JSON")
        context.clock.advance(timedelta(hours=3))
        assert await worker.ask_due() == 0  # given up: asking again would get the same
    by_subject = {thread["subject"]: thread for thread in await threads(inbox)}
    assert [label["name"] for label in by_subject["First"]["labels"]] == ["Later"]
    assert by_subject["Second"]["labels"] == []


async def test_no_agent_no_offer(inbox: Inbox) -> None:
    """Without an agent URL, or with no action allowed, a message is offered to none."""
    await support_inbox(inbox)
    await allow(inbox, "add_labels")
    await write(inbox, inbox.context, "Not offered: no agent")
    agent = await inbox.client.get(f"/inboxes/{SUPPORT}/agent")
    assert agent.json()["agent_url_configured"] is False
    with webhook_receiver() as receiver:
        context = agent_context(inbox, receiver)
        await allow(inbox)
        await write(inbox, context, "Not offered: nothing allowed")
        assert await InboxAgentWorker(context).ask_due() == 0
        assert receiver.requests() == []
    assert await calls(inbox.context) == []


def test_an_agent_url_needs_its_secret() -> None:
    with pytest.raises(ValidationError, match="MAILBRIDGE_INBOX_AGENT_SECRET"):
        Settings(inbox_agent_url="http://127.0.0.1:9/agent")
    settings = Settings(inbox_agent_url="http://127.0.0.1:9/agent", inbox_agent_secret=SECRET)
    assert SECRET not in repr(settings)  # a secret never reaches a log
