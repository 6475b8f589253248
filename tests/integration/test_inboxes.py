"""Inboxes over real received mail: an address of a receiving domain, its mail filed into
threads by References (or subject, within one correspondent's domain), folders, read
marks and labels — the routes the official SDKs' ``inboxes`` methods call."""

# ruff: noqa: F811  (the ``inbox`` fixture is test_inbound's, taken as a parameter)

from __future__ import annotations

import asyncio
import base64
import email
import email.message
import email.policy
from typing import Any

from sqlalchemy import select

from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.accounts import Role
from mailbridge.services.webhooks import default_consumers
from mailbridge.storage.tables import ActivityEvent, Contact, Email
from tests.integration.automation_setup import engine, install, published_template, runs
from tests.integration.test_dashboard import add_member, csrf_of, sign_in
from tests.integration.test_inbound import Inbox, dns, inbox, letter  # noqa: F401
from tests.smtp_listener import Received, smtp_listener

SUPPORT = "support@shop.io"


async def filed(inbox: Inbox) -> None:
    """What the runner's activity dispatcher does: received mail filed into inboxes."""
    await ActivityDispatcher(inbox.context, default_consumers(inbox.context)).dispatch_all()


async def support_inbox(inbox: Inbox) -> str:
    created = await inbox.client.post(
        "/inboxes", json={"email_address": "Support@Shop.io", "name": "Support"}
    )
    assert created.status_code == 201, created.text
    assert created.json()["object"] == "inbox"
    return str(created.json()["id"])


async def threads(inbox: Inbox, query: str = "") -> list[dict[str, Any]]:
    response = await inbox.client.get(f"/inboxes/{SUPPORT}/threads{query}")
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


async def delivered(inbox: Inbox, count: int = 1) -> list[Received]:
    """Deliver what is due over real SMTP into a listener; the messages it got."""
    with smtp_listener() as listener:
        provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
        async with DeliveryWorker(inbox.context, provider=provider) as worker:
            assert await worker.deliver_due() == count
        return listener.messages()


async def write(
    inbox: Inbox, subject: str, sender: str = "Ann <ann@corp.io>", **headers: str
) -> None:
    """A customer writes to support@ (headers: ``Message_ID="<...>"`` and the like)."""
    message = letter(to=SUPPORT)
    for name, value in {"Subject": subject, "From": sender, **headers}.items():
        del message[name.replace("_", "-")]
        message[name.replace("_", "-")] = value
    await inbox.deliver(message, SUPPORT, sender=sender.split("<")[-1].rstrip(">"))
    await filed(inbox)


async def test_an_inbox_is_an_address_on_a_receiving_domain(inbox: Inbox) -> None:
    inbox_id = await support_inbox(inbox)
    refused = await inbox.client.post("/inboxes", json={"email_address": "help@elsewhere.io"})
    assert refused.status_code == 422 and "receiving domains" in refused.json()["message"]
    again = await inbox.client.post("/inboxes", json={"email_address": SUPPORT})
    assert again.status_code == 409 and again.json()["name"] == "inbox_exists"
    for ref in (inbox_id, SUPPORT):
        found = (await inbox.client.get(f"/inboxes/{ref}")).json()
        assert found["id"] == inbox_id and found["email_address"] == SUPPORT
        assert found["name"] == "Support" and found["unread"] == 0
    listed = (await inbox.client.get("/inboxes")).json()
    assert [each["id"] for each in listed["data"]] == [inbox_id]
    changed = await inbox.client.patch(f"/inboxes/{inbox_id}", json={"from_name": "Shop Support"})
    assert changed.status_code == 200
    assert (await inbox.client.get(f"/inboxes/{inbox_id}")).json()["from_name"] == "Shop Support"
    assert (await inbox.client.get("/inboxes/nobody@shop.io")).status_code == 404
    gone = await inbox.client.delete(f"/inboxes/{SUPPORT}")
    assert gone.json() == {"object": "inbox", "id": inbox_id, "deleted": True}
    assert (await inbox.client.get(f"/inboxes/{inbox_id}")).status_code == 404


async def test_received_mail_is_threaded_by_references_then_by_subject(inbox: Inbox) -> None:
    await support_inbox(inbox)
    hook = await inbox.client.post(
        "/webhooks",
        json={"endpoint": "https://hooks.shop.io/in",
              "events": ["inbox.thread.created", "inbox.email.received", "inbox.email.sent"]},
    )  # fmt: skip
    assert hook.status_code == 201, hook.text
    await write(inbox, "Where is my order?", Message_ID="<first@corp.io>")
    [thread] = await threads(inbox)
    assert thread["subject"] == "Where is my order?" and thread["email_count"] == 1
    assert thread["read"] is False and thread["folder"] == "inbox"
    assert thread["from"] == "Ann <ann@corp.io>"
    assert (await inbox.client.get(f"/inboxes/{SUPPORT}")).json()["unread"] == 1

    # Her follow-up names the first message; a colleague's "Re:" from the same company
    # joins by subject; a stranger with the same subject gets a thread of their own.
    await write(inbox, "Anything new?", References="<first@corp.io>")
    await write(inbox, "RE: Where is my order?", "Bo <bo@corp.io>")
    await write(inbox, "Where is my order?", "Cy <cy@other.io>")
    found = await threads(inbox)
    counts = sorted((each["from"], each["email_count"]) for each in found)
    assert counts == [("Ann <ann@corp.io>", 3), ("Cy <cy@other.io>", 1)]
    ann = next(each for each in found if each["from"].startswith("Ann"))

    messages = (await inbox.client.get(f"/inboxes/{SUPPORT}/threads/{ann['id']}/emails")).json()
    subjects = sorted(each["subject"] for each in messages["data"])
    assert subjects == ["Anything new?", "RE: Where is my order?", "Where is my order?"]
    first = next(each for each in messages["data"] if each["message_id"] == "<first@corp.io>")
    assert first["direction"] == "inbound" and first["text"].startswith("Plain words")
    one = await inbox.client.get(f"/inboxes/{SUPPORT}/threads/{ann['id']}/emails/{first['id']}")
    assert one.json()["id"] == first["id"]
    # One message, two views: the same id under /emails/receiving.
    received = await inbox.client.get(f"/emails/receiving/{first['id']}")
    assert received.status_code == 200 and received.json()["subject"] == "Where is my order?"

    async with inbox.context.database.session() as session:
        types = await session.scalars(
            select(ActivityEvent.type).where(ActivityEvent.type.like("inbox.%.%"))
        )
        assert sorted(types) == ["inbox.email.received"] * 4 + ["inbox.thread.created"] * 2


async def test_folders_read_marks_labels_and_the_trash(inbox: Inbox) -> None:
    await support_inbox(inbox)
    await write(inbox, "Refund please")
    await write(inbox, "Hello there", "Cy <cy@other.io>")
    refund, hello = sorted(await threads(inbox), key=lambda each: each["subject"])[::-1]
    base = f"/inboxes/{SUPPORT}/threads"

    urgent = await inbox.client.post(
        f"/inboxes/{SUPPORT}/labels", json={"name": "Urgent", "color": "#e93d82"}
    )
    assert urgent.status_code == 201, urgent.text
    billing = await inbox.client.post(f"/inboxes/{SUPPORT}/labels", json={"name": "Billing"})
    urgent_id, billing_id = urgent.json()["id"], billing.json()["id"]
    duplicate = await inbox.client.post(f"/inboxes/{SUPPORT}/labels", json={"name": "Urgent"})
    assert duplicate.status_code == 409
    bad = await inbox.client.post(f"/inboxes/{SUPPORT}/labels", json={"name": "x", "color": "red"})
    assert bad.status_code == 422
    labels = (await inbox.client.get(f"/inboxes/{SUPPORT}/labels")).json()["data"]
    assert [(each["name"], each["color"]) for each in labels] == [
        ("Billing", "#6B7280"), ("Urgent", "#E93D82"),
    ]  # fmt: skip

    added = await inbox.client.post(f"{base}/{refund['id']}/labels", json={"labels": [urgent_id]})
    assert [each["name"] for each in added.json()["data"]] == ["Urgent"]
    replaced = await inbox.client.put(
        f"{base}/{refund['id']}/labels", json={"labels": [billing_id, urgent_id]}
    )
    assert [each["name"] for each in replaced.json()["data"]] == ["Billing", "Urgent"]
    removed = await inbox.client.delete(f"{base}/{refund['id']}/labels/{urgent_id}")
    assert [each["name"] for each in removed.json()["data"]] == ["Billing"]
    assert [each["id"] for each in await threads(inbox, f"?labels={billing_id}")] == [refund["id"]]

    someone = await add_member(inbox.context, inbox.tenant, Role.ADMIN)
    given = await inbox.client.patch(f"{base}/{hello['id']}", json={"assignee_id": someone})
    assert given.status_code == 200 and given.json()["assignee_id"] is not None
    stranger = await inbox.client.patch(
        f"{base}/{hello['id']}", json={"assignee_id": "nobody@corp.io"}
    )
    assert stranger.status_code == 422
    taken_back = await inbox.client.patch(f"{base}/{hello['id']}", json={"assignee_id": None})
    assert taken_back.json()["assignee_id"] is None
    read = await inbox.client.patch(f"{base}/{hello['id']}", json={"read": True})
    assert read.json()["read"] is True and read.json()["object"] == "inbox_thread"
    assert [each["id"] for each in await threads(inbox, "?read=false")] == [refund["id"]]
    assert (await inbox.client.get(f"/inboxes/{SUPPORT}")).json()["unread"] == 1
    moved = await inbox.client.patch(f"{base}/{hello['id']}", json={"folder": "archive"})
    assert moved.json()["folder"] == "archive"
    assert [each["id"] for each in await threads(inbox, "?folders=archive")] == [hello["id"]]
    assert (
        await inbox.client.patch(f"{base}/{hello['id']}", json={"folder": "sent"})
    ).status_code == 422

    # A new message brings an archived conversation back to the inbox, unread.
    await write(inbox, "Re: Hello there", "Cy <cy@other.io>")
    back = await inbox.client.get(f"{base}/{hello['id']}")
    assert back.json()["folder"] == "inbox" and back.json()["read"] is False

    first = await inbox.client.delete(f"{base}/{refund['id']}")
    assert first.json()["deleted"] is True
    assert (await inbox.client.get(f"{base}/{refund['id']}")).json()["folder"] == "trash"
    assert refund["id"] not in [each["id"] for each in await threads(inbox)]
    await inbox.client.delete(f"{base}/{refund['id']}")
    assert (await inbox.client.get(f"{base}/{refund['id']}")).status_code == 404
    # The received mail itself stays.
    assert len((await inbox.client.get("/emails/receiving")).json()["data"]) == 3


async def test_a_reply_from_the_inbox_and_the_answer_to_it_share_the_thread(
    inbox: Inbox,
) -> None:
    """The conversation: a customer writes to support@, a member replies from the inbox
    (delivered over real SMTP to a listener), the customer answers the reply — one
    thread, unread again."""
    await support_inbox(inbox)
    await inbox.client.patch(f"/inboxes/{SUPPORT}", json={"from_name": "Shop Support"})
    await write(inbox, "Broken zipper", Message_ID="<zip-1@corp.io>", References="<x@corp.io>")
    [thread] = await threads(inbox)
    base = f"/inboxes/{SUPPORT}/threads/{thread['id']}"
    [question] = (await inbox.client.get(f"{base}/emails")).json()["data"]
    await inbox.client.patch(base, json={"read": True})

    refused = await inbox.client.post(
        f"{base}/emails/{question['id']}/reply",
        json={"text": "x", "headers": {"References": "<forged@x.io>"}},
    )
    assert refused.status_code == 422 and "References" in refused.json()["message"]
    replied = await inbox.client.post(
        f"{base}/emails/{question['id']}/reply",
        json={"text": "A new one is on its way.", "html": "<p>A new one is on its way.</p>"},
        headers={"Idempotency-Key": "reply-1"},
    )
    assert replied.status_code == 200, replied.text
    reply_id = replied.json()["id"]
    again = await inbox.client.post(
        f"{base}/emails/{question['id']}/reply",
        json={"text": "A new one is on its way.", "html": "<p>A new one is on its way.</p>"},
        headers={"Idempotency-Key": "reply-1"},
    )
    assert again.json()["id"] == reply_id  # the same reply, not a second one

    [sent] = await delivered(inbox)
    assert sent.rcpt_tos == ["ann@corp.io"]
    assert sent.header("From") == "Shop Support <support@shop.io>"
    assert sent.header("Subject") == "Re: Broken zipper"
    assert sent.header("In-Reply-To") == "<zip-1@corp.io>"
    assert sent.header("References") == "<x@corp.io> <zip-1@corp.io>"
    # The question quoted below the answer, as mail clients do: "> " lines, a blockquote.
    parsed = email.message_from_bytes(sent.content, policy=email.policy.default)
    assert isinstance(parsed, email.message.EmailMessage)
    text, html = (parsed.get_body((kind,)) for kind in ("plain", "html"))
    assert text is not None and html is not None
    assert text.get_content().replace("\r\n", "\n").startswith("A new one is on its way.\n\nOn ")
    assert "Ann <ann@corp.io> wrote:\n> Plain words" in text.get_content().replace("\r\n", "\n")
    assert '<blockquote type="cite"' in html.get_content()
    assert "<p>HTML words</p>\r\n</blockquote>" in html.get_content()  # the original, whole
    await filed(inbox)
    emails = (await inbox.client.get(f"{base}/emails")).json()["data"]
    assert (emails[0]["direction"], emails[0]["id"]) == ("outbound", reply_id)  # newest first
    assert emails[0]["from"] == "Shop Support <support@shop.io>"

    await write(inbox, "Re: Broken zipper", In_Reply_To=sent.message_id)
    [same] = await threads(inbox)
    assert same["id"] == thread["id"] and same["email_count"] == 3
    assert same["read"] is False and same["folder"] == "inbox"

    bare = await inbox.client.post(
        f"{base}/emails/{question['id']}/reply", json={"text": "Short.", "quote": False}
    )
    assert bare.status_code == 200, bare.text
    stored = (await inbox.client.get(f"/emails/{bare.json()['id']}")).json()
    assert stored["text"] == "Short."  # "quote": false leaves the original out


async def test_the_agent_settings_are_kept(inbox: Inbox) -> None:
    await support_inbox(inbox)
    agent = (await inbox.client.get(f"/inboxes/{SUPPORT}/agent")).json()
    assert agent == {
        "object": "inbox_agent", "instructions": None, "tone": None, "actions": [],
        "agent_url_configured": False,
    }  # fmt: skip
    changed = await inbox.client.patch(
        f"/inboxes/{SUPPORT}/agent",
        json={"instructions": "Be kind.", "tone": "concise_casual",
              "actions": ["draft_reply", "add_labels", "draft_reply"]},
    )  # fmt: skip
    assert changed.status_code == 200 and changed.json()["object"] == "inbox_agent"
    agent = (await inbox.client.get(f"/inboxes/{SUPPORT}/agent")).json()
    assert (agent["instructions"], agent["tone"]) == ("Be kind.", "concise_casual")
    assert agent["actions"] == ["draft_reply", "add_labels"]
    for bad in ({"tone": "shouty"}, {"actions": ["send_reply"]}, {}, {"instructions": 5}):
        refused = await inbox.client.patch(f"/inboxes/{SUPPORT}/agent", json=bad)
        assert refused.status_code == 422, bad


async def test_drafts_are_written_kept_and_sent(inbox: Inbox) -> None:
    await support_inbox(inbox)
    await write(inbox, "Invoice missing", Message_ID="<inv-1@corp.io>")
    [thread] = await threads(inbox)
    emails_of = f"/inboxes/{SUPPORT}/threads/{thread['id']}/emails"
    [question] = (await inbox.client.get(emails_of)).json()["data"]
    drafts = f"/inboxes/{SUPPORT}/drafts"

    note = base64.b64encode(b"invoice 42").decode()
    created = await inbox.client.post(
        drafts,
        json={"to": "bo@corp.io", "subject": "Your invoice", "text": "Attached.",
              "attachments": [{"filename": "inv.txt", "content": note,
                               "content_type": "text/plain"}]},
        headers={"Idempotency-Key": "draft-1"},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    draft_id = created.json()["id"]
    repeat = await inbox.client.post(
        drafts, json={"to": "bo@corp.io", "text": "x"}, headers={"Idempotency-Key": "draft-1"}
    )
    assert repeat.json()["id"] == draft_id
    assert (await inbox.client.post(drafts, json={})).status_code == 422
    bad = await inbox.client.post(
        drafts, json={"text": "x", "attachments": [{"filename": "a", "content": "%%%"}]}
    )
    assert bad.status_code == 422

    got = (await inbox.client.get(f"{drafts}/{draft_id}")).json()
    assert got["type"] == "standalone" and got["to"] == ["bo@corp.io"]
    assert [(each["filename"], each["size"]) for each in got["attachments"]] == [("inv.txt", 10)]
    changed = await inbox.client.patch(f"{drafts}/{draft_id}", json={"cc": ["cy@corp.io"]})
    assert changed.status_code == 200
    assert (await inbox.client.get(f"/inboxes/{SUPPORT}")).json()["drafts"] == 1

    reply = await inbox.client.post(
        drafts,
        json={"thread_id": thread["id"], "reply_to_email_id": question["id"],
              "text": "We sent it again."},
    )  # fmt: skip
    assert reply.status_code == 201, reply.text
    [listed] = await threads(inbox)
    assert listed["has_draft"] is True
    half = await inbox.client.post(drafts, json={"thread_id": thread["id"], "text": "x"})
    assert half.status_code == 422

    forged = await inbox.client.post(
        f"{drafts}/{draft_id}/send", json={"headers": {"in-reply-to": "<x@corp.io>"}}
    )
    assert forged.status_code == 422 and "In-Reply-To" in forged.json()["message"]
    # Two sends of the draft at once make one email: the second waits its turn (409) or
    # is answered with the first's id.
    first, second = await asyncio.gather(*(
        inbox.client.post(f"{drafts}/{draft_id}/send", json={"headers": {"X-Ticket": "42"}},
                          headers={"Idempotency-Key": key})
        for key in ("send-1", "send-2")
    ))  # fmt: skip
    assert sorted([first.status_code, second.status_code]) in ([200, 200], [200, 409])
    sent = first if first.status_code == 200 else second
    for key in ("send-1", "send-3"):  # a repeat after a lost answer, whatever its key
        again = await inbox.client.post(
            f"{drafts}/{draft_id}/send", json={"headers": {"X-Ticket": "42"}},
            headers={"Idempotency-Key": key},
        )  # fmt: skip
        assert again.status_code == 200 and again.json()["id"] == sent.json()["id"]
    assert (await inbox.client.post(f"{drafts}/{draft_id}/send")).status_code == 422
    async with inbox.context.database.session() as session:
        mailed = await session.scalars(select(Email.id).where(Email.subject == "Your invoice"))
        assert list(mailed) == [sent.json()["id"]]  # one email, however often it was sent
    assert (await inbox.client.get(f"{drafts}/{draft_id}")).json()["email_id"] == sent.json()["id"]
    email = (await inbox.client.get(f"/emails/{sent.json()['id']}")).json()
    assert email["from"] == "support@shop.io" and email["cc"] == ["cy@corp.io"]
    replied = await inbox.client.post(f"{drafts}/{reply.json()['id']}/send")
    assert replied.status_code == 200, replied.text
    listed_drafts = (await inbox.client.get(drafts)).json()["data"]
    assert listed_drafts == []

    by_subject = {each.header("Subject"): each for each in await delivered(inbox, 2)}
    assert by_subject["Re: Invoice missing"].header("In-Reply-To") == "<inv-1@corp.io>"
    assert by_subject["Re: Invoice missing"].rcpt_tos == ["ann@corp.io"]
    assert b"aW52b2ljZSA0Mg==" in by_subject["Your invoice"].content  # the file, base64
    assert by_subject["Your invoice"].header("X-Ticket") == "42"
    await filed(inbox)
    [same] = await threads(inbox, "?folders=inbox")
    assert same["email_count"] == 2 and same["has_draft"] is False
    gone = await inbox.client.delete(f"{drafts}/{draft_id}")
    assert gone.json()["deleted"] is True


async def test_mail_to_an_inbox_starts_an_automation_for_its_sender(inbox: Inbox) -> None:
    """``inbox.email.received`` is a built-in trigger, about the correspondent: the
    condition step routes on what the event carries (the subject here)."""
    context, team_id = inbox.context, inbox.tenant.team_id
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "inbox.email.received"}},
         {"key": "urgent", "type": "condition",
          "config": {"type": "rule", "field": "event.subject", "operator": "starts_with",
                     "value": "URGENT"}},
         {"key": "mark", "type": "contact_update", "config": {"first_name": "Urgent"}},
         {"key": "calm", "type": "contact_update", "config": {"first_name": "Calm"}}],
        [{"from": "start", "to": "urgent"},
         {"from": "urgent", "to": "mark", "type": "condition_met"},
         {"from": "urgent", "to": "calm", "type": "condition_not_met"}],
    )  # fmt: skip
    await support_inbox(inbox)
    await write(inbox, "URGENT: card charged twice")
    await filed(inbox)  # the filer's inbox.email.received, handed to the triggers
    await engine(context).run_due()
    [run] = await runs(context, automation_id)
    assert run.status == "completed"
    async with context.database.session() as session:
        contact = await session.get(Contact, run.contact_id or "")
    assert contact is not None and (contact.email, contact.first_name) == ("ann@corp.io", "Urgent")


async def test_threads_are_found_by_their_words_and_addresses(inbox: Inbox) -> None:
    await support_inbox(inbox)
    await write(inbox, "Invoice 2041 is wrong")
    await write(inbox, "Shipping to Zürich", "Cy <cy@other.io>")
    await write(inbox, "Hello", "Di <di@else.io>")
    found = {each["subject"]: each for each in await threads(inbox)}
    search = f"/inboxes/{SUPPORT}/threads/search"

    async def subjects(query: str) -> list[str]:
        response = await inbox.client.get(f"{search}?{query}")
        assert response.status_code == 200, response.text
        return sorted(each["subject"] for each in response.json()["data"])

    assert await subjects("query=invoice") == ["Invoice 2041 is wrong"]
    assert await subjects("query=invo") == ["Invoice 2041 is wrong"]  # a prefix of a word
    assert await subjects("query=zurich") == ["Shipping to Zürich"]  # diacritics folded
    assert await subjects("query=plain+words") == sorted(found)  # every body says so
    assert await subjects("query=invoice+zurich") == []  # every word must appear
    assert await subjects("from=cy@other.io") == ["Shipping to Zürich"]
    assert await subjects("query=words&from=di@else.io,cy@other.io") == [
        "Hello", "Shipping to Zürich",
    ]  # fmt: skip
    assert await subjects('query="OR" NOT (*') == []  # FTS syntax is just words here
    [hit] = (await inbox.client.get(f"{search}?query=2041")).json()["data"]
    assert hit["matched_email_id"] is not None and hit["id"] == found["Invoice 2041 is wrong"]["id"]
    await inbox.client.patch(f"/inboxes/{SUPPORT}/threads/{hit['id']}", json={"folder": "archive"})
    assert await subjects("query=invoice&folders=inbox") == []
    assert await subjects("query=invoice&folders=archive") == ["Invoice 2041 is wrong"]
    assert await subjects("query=hello&has_attachment=true") == []
    assert (await inbox.client.get(f"{search}?start_date=yesterday")).status_code == 422

    # Gone from the trash for good: gone from the index too.
    for _ in range(2):
        await inbox.client.delete(f"/inboxes/{SUPPORT}/threads/{hit['id']}")
    assert await subjects("query=invoice&folders=inbox,archive,trash") == []


async def test_a_message_is_forwarded_with_its_files(inbox: Inbox) -> None:
    await support_inbox(inbox)
    message = letter(to=SUPPORT)
    message.replace_header("Subject", "Quote please")
    message.add_attachment(b"%PDF-1.4 spec", maintype="application", subtype="pdf",
                           filename="spec.pdf")  # fmt: skip
    await inbox.deliver(message, SUPPORT)
    await filed(inbox)
    [thread] = await threads(inbox)
    base = f"/inboxes/{SUPPORT}/threads/{thread['id']}/emails"
    [original] = (await inbox.client.get(base)).json()["data"]

    refused = await inbox.client.post(f"{base}/{original['id']}/forward", json={"text": "FYI"})
    assert refused.status_code == 422
    forwarded = await inbox.client.post(
        f"{base}/{original['id']}/forward",
        json={"to": ["sales@corp.io"], "text": "FYI, can you quote?"},
    )
    assert forwarded.status_code == 200, forwarded.text
    [sent] = await delivered(inbox)
    assert sent.rcpt_tos == ["sales@corp.io"]
    assert sent.header("Subject") == "Fwd: Quote please"
    parsed = email.message_from_bytes(sent.content, policy=email.policy.default)
    text_part = next(part for part in parsed.walk() if part.get_content_type() == "text/plain")
    body = text_part.get_content()
    assert body.startswith("FYI, can you quote?")
    assert "---------- Forwarded message ---------" in body and "Plain words" in body
    [pdf] = [part for part in parsed.walk() if part.get_filename() == "spec.pdf"]
    assert pdf.get_content() == b"%PDF-1.4 spec"

    # Attached whole instead: the received bytes as message/rfc822, under the caller's words.
    wrapped = await inbox.client.post(
        f"{base}/{original['id']}/forward",
        json={"to": ["sales@corp.io"], "text": "The customer's mail, attached.",
              "attach_original": True},
    )  # fmt: skip
    assert wrapped.status_code == 200, wrapped.text
    [sent] = await delivered(inbox)
    parsed = email.message_from_bytes(sent.content, policy=email.policy.default)
    assert isinstance(parsed, email.message.EmailMessage)
    plain = parsed.get_body(("plain",))
    assert plain is not None and plain.get_content().strip() == "The customer's mail, attached."
    [attached] = [part for part in parsed.walk() if part.get_content_type() == "message/rfc822"]
    assert attached.get_filename() == "forwarded_message.eml"
    inner = attached.get_content()
    assert inner["Subject"] == "Quote please" and inner["Message-ID"] == message["Message-ID"]
    assert [part.get_content_type() for part in parsed.iter_parts()] == [
        "text/plain", "message/rfc822",
    ]  # fmt: skip
    [inside] = [part for part in inner.walk() if part.get_filename() == "spec.pdf"]
    assert inside.get_content() == b"%PDF-1.4 spec"  # the files travel inside the original
    for bad in ({"attach_original": "yes"},):
        refused = await inbox.client.post(
            f"{base}/{original['id']}/forward", json={"to": ["sales@corp.io"], **bad}
        )
        assert refused.status_code == 422, refused.text


async def test_the_conversation_an_automation_prepares_and_a_member_sends(
    inbox: Inbox,
) -> None:
    """A customer writes to support@; an automation labels the thread and drafts a reply
    from a template; a member sends the draft from the dashboard; the customer answers;
    the answer is in the same thread, unread — over real SMTP into a listener."""
    context, team_id = inbox.context, inbox.tenant.team_id
    template_id = await published_template(inbox.client, {})
    agent = await add_member(context, inbox.tenant, Role.ADMIN)
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "inbox.email.received"}},
         {"key": "tag", "type": "add_labels", "config": {"labels": ["Orders", "Orders"]}},
         {"key": "give", "type": "assign_thread", "config": {"assignee": agent}},
         {"key": "answer", "type": "draft_reply",
          "config": {"template": {"id": template_id}, "variables": {"PLAN": "gold"}}}],
        [{"from": "start", "to": "tag"}, {"from": "tag", "to": "give"},
         {"from": "give", "to": "answer"}],
        template_id=template_id,
    )  # fmt: skip
    await support_inbox(inbox)
    await write(inbox, "Where is order 77?", Message_ID="<o77@corp.io>")
    await engine(context).run_due()
    [run] = await runs(context, automation_id)
    assert run.status == "completed", run

    [thread] = await threads(inbox)
    assert [label["name"] for label in thread["labels"]] == ["Orders"]
    assert thread["has_draft"] is True and thread["assignee_id"] is not None
    [draft] = (await inbox.client.get(f"/inboxes/{SUPPORT}/drafts")).json()["data"]
    assert draft["type"] == "reply" and draft["thread_id"] == thread["id"]
    full = (await inbox.client.get(f"/inboxes/{SUPPORT}/drafts/{draft['id']}")).json()
    assert full["text"] == "Plan gold" and full["subject"] is None  # the reply's, when sent
    assert "ann@corp.io" in full["html"]

    # The member opens the thread in the dashboard and sends the draft with its button.
    await sign_in(inbox.client, agent)
    page = await inbox.client.get(f"/dashboard/inboxes/{SUPPORT}/threads/{thread['id']}")
    assert page.status_code == 200 and "Send this draft" in page.text
    sent = await inbox.client.post(
        f"/dashboard/inboxes/{SUPPORT}/drafts/{draft['id']}/send",
        data={"csrf": csrf_of(page), "thread_id": thread["id"]},
    )
    assert sent.status_code == 303 and "Draft+sent" in sent.headers["location"]
    [reply] = await delivered(inbox)
    assert reply.rcpt_tos == ["ann@corp.io"] and reply.header("In-Reply-To") == "<o77@corp.io>"
    assert reply.header("Subject") == "Re: Where is order 77?"
    await filed(inbox)
    await inbox.client.patch(f"/inboxes/{SUPPORT}/threads/{thread['id']}", json={"read": True})

    await write(inbox, "Re: Where is order 77?", In_Reply_To=reply.message_id)
    [same] = await threads(inbox)
    assert same["id"] == thread["id"] and same["email_count"] == 3
    assert same["read"] is False and same["has_draft"] is False
    # The customer's second message starts the automation again: a second draft waits.
    await engine(context).run_due()
    assert len(await runs(context, automation_id)) == 2
