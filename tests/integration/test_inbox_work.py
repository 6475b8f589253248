"""What happens to a conversation besides its mail: an automation forwarding it, and the
``inbox.thread.updated`` / ``inbox.draft.sent`` events that tell webhooks of every change
— a member's, a step's — without starting automations again."""

# ruff: noqa: F811  (the ``inbox`` fixture is test_inbound's, taken as a parameter)

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

from sqlalchemy import select

from mailbridge.clock import FakeClock
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services import inboxes, webhooks
from mailbridge.services.accounts import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ActivityEvent, Email, EmailAttachment
from tests.integration.automation_setup import engine, install, runs
from tests.integration.test_dashboard import add_member, sign_in
from tests.integration.test_inbound import Inbox, dns, inbox, letter  # noqa: F401
from tests.integration.test_inboxes import SUPPORT, filed, support_inbox, threads, write
from tests.webhook_receiver import webhook_receiver


async def events(inbox: Inbox, type_: str) -> list[dict[str, Any]]:
    async with inbox.context.database.session() as session:
        found = await session.scalars(
            select(ActivityEvent)
            .where(ActivityEvent.type == type_)
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return [dict(row.data or {}) for row in found]


async def test_an_automation_forwards_the_message_once_with_its_files(inbox: Inbox) -> None:
    context, team_id = inbox.context, inbox.tenant.team_id
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "inbox.email.received"}},
         {"key": "pass", "type": "forward_thread",
          "config": {"to": ["billing@shop.io"], "text": "For billing."}}],
        [{"from": "start", "to": "pass"}],
    )  # fmt: skip
    await support_inbox(inbox)
    message = letter(to=SUPPORT)
    del message["Subject"]
    message["Subject"] = "Invoice 12 is wrong"
    message.add_attachment(b"%PDF-1.4 invoice", maintype="application", subtype="pdf",
                           filename="invoice-12.pdf")  # fmt: skip
    await inbox.deliver(message, SUPPORT)
    await filed(inbox)
    await engine(context).run_due()
    [run] = await runs(context, automation_id)
    assert run.status == "completed", run
    await engine(context).run_due()  # nothing more: the step forwarded once
    async with context.database.session() as session:
        [forward] = (await session.scalars(select(Email).where(Email.team_id == team_id))).all()
        files = (
            await session.scalars(
                select(EmailAttachment).where(EmailAttachment.email_id == forward.id)
            )
        ).all()
    assert forward.to == ["billing@shop.io"] and forward.subject == "Fwd: Invoice 12 is wrong"
    assert forward.from_email == SUPPORT
    assert forward.text is not None and forward.text.startswith("For billing.")
    assert "Forwarded message" in forward.text and "From: Ann <ann@corp.io>" in forward.text
    assert [(each.filename, each.content) for each in files] == [
        ("invoice-12.pdf", b"%PDF-1.4 invoice")
    ]
    # The dashboard draws the inbox automation like any other, the run's path lit.
    await sign_in(inbox.client, await add_member(context, inbox.tenant, Role.ADMIN))
    page = await inbox.client.get(f"/dashboard/automations/{automation_id}?run={run.id}")
    assert page.status_code == 200
    assert "<g class='step on' data-key='pass'>" in page.text and "forward thread" in page.text


async def test_a_forward_step_fails_the_run_when_the_address_is_refused(inbox: Inbox) -> None:
    context, team_id = inbox.context, inbox.tenant.team_id
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "inbox.email.received"}},
         {"key": "pass", "type": "forward_thread", "config": {"to": ["not an address"]}}],
        [{"from": "start", "to": "pass"}],
    )  # fmt: skip
    await support_inbox(inbox)
    await write(inbox, "Hello")
    await engine(context).run_due()
    [run] = await runs(context, automation_id)
    assert run.status == "failed"
    async with context.database.session() as session:
        assert (await session.scalars(select(Email))).all() == []


async def test_every_change_to_a_thread_is_an_event_and_none_starts_a_run(inbox: Inbox) -> None:
    context, team_id = inbox.context, inbox.tenant.team_id
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "inbox.email.received"}},
         {"key": "tag", "type": "add_labels", "config": {"labels": ["Triage"]}},
         {"key": "file", "type": "archive", "config": {}}],
        [{"from": "start", "to": "tag"}, {"from": "tag", "to": "file"}],
    )  # fmt: skip
    inbox_id = await support_inbox(inbox)
    await write(inbox, "Question", Message_ID="<q1@corp.io>")
    await engine(context).run_due()
    [thread] = await threads(inbox, "?folders=archive")
    base = f"/inboxes/{SUPPORT}/threads/{thread['id']}"
    assert (await inbox.client.patch(base, json={"read": True})).status_code == 200
    labels = await inbox.client.get(f"/inboxes/{SUPPORT}/labels")
    [triage] = labels.json()["data"]
    removed = await inbox.client.delete(f"{base}/labels/{triage['id']}")
    assert removed.status_code == 200, removed.text
    assert (await inbox.client.delete(base)).status_code == 200  # to the trash

    updates = await events(inbox, "inbox.thread.updated")
    assert [(each["source"], each["changed"]) for each in updates] == [
        ("system", ["labels"]), ("system", ["folder"]), ("api", ["read"]), ("api", ["labels"]),
        ("api", ["folder"]),
    ]  # fmt: skip
    assert {(each["inbox_id"], each["thread_id"]) for each in updates} == {(inbox_id, thread["id"])}
    assert updates[-1]["thread"]["folder"] == "trash" and updates[-1]["thread"]["labels"] == []
    # As the SDKs' webhook types tell them:
    moves = await events(inbox, "inbox.thread.folder.updated")
    assert [(each["from"], each["to"]) for each in moves] == [
        ("inbox", "archive"), ("archive", "trash"),
    ]  # fmt: skip
    labelled = await events(inbox, "inbox.thread.labels.updated")
    assert [([x["name"] for x in each["added"]], [x["name"] for x in each["removed"]])
            for each in labelled] == [(["Triage"], []), ([], ["Triage"])]  # fmt: skip
    assert labelled[0]["thread"]["labels"] == [
        {"id": triage["id"], "name": "Triage", "color": triage["color"]}
    ]
    await filed(inbox)  # the updates reach the triggers: none starts the automation again
    await engine(context).run_due()
    assert len(await runs(context, automation_id)) == 1

    draft = await inbox.client.post(
        f"/inboxes/{SUPPORT}/drafts", json={"to": ["bo@corp.io"], "subject": "Hi", "text": "Hi"}
    )
    assert draft.status_code in (200, 201), draft.text
    sent = await inbox.client.post(f"/inboxes/{SUPPORT}/drafts/{draft.json()['id']}/send")
    assert sent.status_code == 200, sent.text
    [told] = await events(inbox, "inbox.draft.sent")
    assert told["draft_id"] == draft.json()["id"] and told["email_id"] == sent.json()["id"]
    assert told["to"] == ["bo@corp.io"] and told["inbox_id"] == inbox_id


async def test_assigning_a_thread_tells_who_had_it(inbox: Inbox) -> None:
    ana = await add_member(inbox.context, inbox.tenant, Role.ADMIN)
    bo = await add_member(inbox.context, inbox.tenant, Role.ADMIN)
    await support_inbox(inbox)
    await write(inbox, "Help")
    [thread] = await threads(inbox)
    base = f"/inboxes/{SUPPORT}/threads/{thread['id']}"
    for member in (ana, bo, None):
        changed = await inbox.client.patch(base, json={"assignee_id": member})
        assert changed.status_code == 200, changed.text
    assigned = await events(inbox, "inbox.thread.assigned")
    assert [(each["assignee_email"], each["previous_assignee_email"]) for each in assigned] == [
        (ana, None), (bo, ana),
    ]  # fmt: skip
    [unassigned] = await events(inbox, "inbox.thread.unassigned")
    assert unassigned["previous_assignee_email"] == bo
    updates = await events(inbox, "inbox.thread.updated")
    assert [each["changed"] for each in updates] == [["assignee_id"]] * 3


async def test_inboxes_and_drafts_tell_webhooks_as_the_sdks_types_have_it(inbox: Inbox) -> None:
    inbox_id = await support_inbox(inbox)
    await inbox.client.patch(f"/inboxes/{SUPPORT}", json={"from_name": "Shop Support"})
    nothing = await inbox.client.patch(f"/inboxes/{SUPPORT}", json={})
    assert nothing.status_code == 422  # a change asks for something to change; no event
    draft = await inbox.client.post(f"/inboxes/{SUPPORT}/drafts", json={"subject": "Soon"})
    draft_id = draft.json()["id"]
    await inbox.client.patch(f"/inboxes/{SUPPORT}/drafts/{draft_id}", json={"text": "Later"})
    assert (await inbox.client.delete(f"/inboxes/{SUPPORT}/drafts/{draft_id}")).status_code == 200
    assert (await inbox.client.delete(f"/inboxes/{SUPPORT}")).status_code == 200

    [created] = await events(inbox, "inbox.created")
    [updated] = await events(inbox, "inbox.updated")
    [deleted] = await events(inbox, "inbox.deleted")
    assert created["inbox"]["email_address"] == SUPPORT and created["inbox_id"] == inbox_id
    assert updated["inbox"]["from_name"] == "Shop Support" and updated["source"] == "api"
    assert deleted == {"source": "api", "inbox_id": inbox_id}
    drafted = [
        (type_, each["draft_id"], each["draft"]["subject"], "text" in each["draft"])
        for type_ in ("inbox.draft.created", "inbox.draft.updated", "inbox.draft.deleted")
        for each in await events(inbox, type_)
    ]  # the bodies stay out of webhooks, as the SDK's InboxEventDraft has it
    assert drafted == [
        ("inbox.draft.created", draft_id, "Soon", False),
        ("inbox.draft.updated", draft_id, "Soon", False),
        ("inbox.draft.deleted", draft_id, "Soon", False),
    ]


async def test_a_threads_files_sent_and_received_come_with_download_links(inbox: Inbox) -> None:
    await support_inbox(inbox)
    question = letter(to=SUPPORT)
    question.add_attachment(b"photo bytes", maintype="image", subtype="png", filename="a.png")
    await inbox.deliver(question, SUPPORT)
    await filed(inbox)
    [thread] = await threads(inbox)
    base = f"/inboxes/{SUPPORT}/threads/{thread['id']}/emails"
    [received] = (await inbox.client.get(base)).json()["data"]
    receipt = base64.b64encode(b"receipt bytes").decode()
    reply = await inbox.client.post(
        f"{base}/{received['id']}/reply",
        json={"text": "Here is your receipt.", "attachments": [
            {"filename": "receipt.txt", "content": receipt, "content_type": "text/plain"}]},
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    async with DeliveryWorker(inbox.context) as worker:  # the file outbox
        assert await worker.deliver_due() == 1
    await filed(inbox)  # filed into the thread on its email.sent

    listed = (await inbox.client.get(base)).json()["data"]
    files = {
        message["direction"]: [(each["filename"], each["size"]) for each in message["attachments"]]
        for message in listed
    }
    assert files == {"inbound": [("a.png", 11)], "outbound": [("receipt.txt", 13)]}
    public = inbox.context.settings.public_url
    for message, content in zip(listed, (b"receipt bytes", b"photo bytes"), strict=True):
        [item] = message["attachments"]
        got = await inbox.client.get(item["download_url"].removeprefix(public))
        assert (got.status_code, got.content) == (200, content), item
        assert item["expires_at"]
    one = await inbox.client.get(f"{base}/{listed[0]['id']}")
    assert one.json()["attachments"][0]["download_url"]


async def test_the_trash_is_emptied_after_its_retention(inbox: Inbox) -> None:
    await support_inbox(inbox)
    await write(inbox, "Old news")
    await write(inbox, "Fresh news")
    by_subject = {thread["subject"]: thread["id"] for thread in await threads(inbox)}
    for subject in by_subject:
        await inbox.client.delete(f"/inboxes/{SUPPORT}/threads/{by_subject[subject]}")
    later = FakeClock(datetime.now(UTC) + timedelta(days=30, minutes=1))
    trashed = await inboxes.empty_trash(inbox.context.database, later, timedelta(days=31))
    assert trashed == 0  # not yet a month and a day
    later.advance(timedelta(days=1))
    assert await inboxes.empty_trash(inbox.context.database, later, timedelta(days=31)) == 2
    assert await threads(inbox, "?folders=trash") == []
    assert len(await inbox.rows()) == 2  # the mail itself stays under /emails/receiving


def plain(text: str, message_id: str, **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["Subject"] = "Ann <ann@corp.io>", "Order 9"
    message["To"] = headers.pop("To", SUPPORT)
    message["Message-ID"] = message_id
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(text)
    return message


async def test_a_condition_routes_on_the_messages_text_and_the_threads_labels(
    inbox: Inbox,
) -> None:
    """The event carries the text and the thread's labels: the first message about a
    refund labels its thread; the customer's next message in it is routed by that label."""
    context, team_id = inbox.context, inbox.tenant.team_id
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "inbox.email.received"}},
         {"key": "known", "type": "condition",
          "config": {"type": "rule", "field": "event.labels", "operator": "contains",
                     "value": "Refunds"}},
         {"key": "refund", "type": "condition",
          "config": {"type": "rule", "field": "event.text", "operator": "contains",
                     "value": "refund"}},
         {"key": "tag", "type": "add_labels", "config": {"labels": ["Refunds"]}},
         {"key": "escalate", "type": "add_labels", "config": {"labels": ["Second ask"]}}],
        [{"from": "start", "to": "known"},
         {"from": "known", "to": "escalate", "type": "condition_met"},
         {"from": "known", "to": "refund", "type": "condition_not_met"},
         {"from": "refund", "to": "tag", "type": "condition_met"}],
    )  # fmt: skip
    await support_inbox(inbox)
    await inbox.deliver(plain("Hello, I would like a refund for order 9.", "<r1@corp.io>"), SUPPORT)
    await filed(inbox)
    await engine(context).run_due()
    [thread] = await threads(inbox)
    assert [label["name"] for label in thread["labels"]] == ["Refunds"]

    await inbox.deliver(plain("Any news?", "<r2@corp.io>", In_Reply_To="<r1@corp.io>"), SUPPORT)
    await filed(inbox)
    await engine(context).run_due()
    [same] = await threads(inbox)
    assert [label["name"] for label in same["labels"]] == ["Refunds", "Second ask"]
    assert all(run.status == "completed" for run in await runs(context, automation_id))
    [told] = [each for each in await events(inbox, "inbox.email.received")
              if each["text"].startswith("Any news?")]  # fmt: skip
    assert told["labels"] == ["Refunds"] and told["thread_id"] == thread["id"]


async def test_a_subscriber_receives_the_inbox_events_signed(inbox: Inbox) -> None:
    """Over a real loopback receiver: the filer's and a member's events reach the webhook
    subscribed to them, signed, with the data the SDKs' types describe."""
    settings = inbox.context.settings.model_copy(update={"webhook_allow_private": True})
    context = ServiceContext(settings=settings, database=inbox.context.database,
                             clock=inbox.context.clock)  # fmt: skip
    await support_inbox(inbox)
    with webhook_receiver() as receiver:
        async with context.database.session() as session:
            hook = await webhooks.create_webhook(
                session, context.clock, settings, inbox.tenant.team_id, receiver.url(),
                ["inbox.email.received", "inbox.thread.folder.updated"],
            )  # fmt: skip
            await session.commit()
        await write(inbox, "Where is my parcel?")
        [thread] = await threads(inbox)
        await inbox.client.patch(f"/inboxes/{SUPPORT}/threads/{thread['id']}",
                                 json={"folder": "archive"})  # fmt: skip
        await filed(inbox)  # the activity dispatch fans the events out to the webhook
        worker = WebhookWorker(context)
        try:
            await worker.deliver_due()
        finally:
            await worker.close()
        received = receiver.wait_for(2)
    payloads = sorted((request.payload for request in received), key=lambda each: each["type"])
    assert all(request.signed_with(hook.secret) for request in received)
    email, moved = payloads
    assert email["type"] == "inbox.email.received"
    assert email["data"]["thread_id"] == thread["id"] and email["data"]["subject"] == (
        "Where is my parcel?"
    )
    assert moved["type"] == "inbox.thread.folder.updated"
    assert (moved["data"]["from"], moved["data"]["to"]) == ("inbox", "archive")


async def test_a_search_finds_only_its_own_inboxes_mail(inbox: Inbox) -> None:
    """The index holds every inbox's messages; a search matches its inbox's alone (on
    SQLite by the inbox's token in the FTS5 row, on PostgreSQL by ``inbox_id``)."""
    await support_inbox(inbox)
    sales = await inbox.client.post("/inboxes", json={"email_address": "sales@shop.io"})
    assert sales.status_code == 201, sales.text
    for to, text in ((SUPPORT, "my zeppelin broke"), ("sales@shop.io", "a zeppelin quote")):
        await inbox.deliver(plain(text, f"<{to.split('@')[0]}@corp.io>", To=to), to)
    await filed(inbox)

    async def found(address: str, query: str) -> list[str]:
        answer = await inbox.client.get(f"/inboxes/{address}/threads/search?query={query}")
        assert answer.status_code == 200, answer.text
        return [thread["subject"] for thread in answer.json()["data"]]

    assert await found(SUPPORT, "zeppelin") == ["Order 9"]
    assert await found("sales@shop.io", "zepp") == ["Order 9"]
    assert await found(SUPPORT, "quote") == []  # sales@'s word
    assert await found("sales@shop.io", "broke") == []
