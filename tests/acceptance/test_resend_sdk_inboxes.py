"""Inboxes through the official Python SDK on a real ``serve``: an inbox on the receiving
domain (by id and by address), mail to it over SMTP filed into one thread by its
References, the thread's messages, folders, read marks and labels."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage
from typing import Any

import resend
import resend.exceptions

from tests.acceptance.conftest import Server, admin
from tests.acceptance.test_resend_sdk_rest import until

ADDRESS = "support@shop.io"


def write(server: Server, subject: str, **headers: str) -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ann@corp.io", ADDRESS, subject
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content("Where is it?")
    host, _, port = server.env["MAILBRIDGE_INBOUND_SMTP"].rpartition(":")
    with smtplib.SMTP(host, int(port), timeout=30) as smtp:
        smtp.send_message(message)


def test_sdk_works_an_inbox(sdk: Server) -> None:
    admin("domains", "add", "shop.io", "--verified", "--receiving", env=sdk.env)
    created = resend.Inboxes.create({"email_address": ADDRESS, "name": "Support"})
    assert created["object"] == "inbox"
    inbox_id = created["id"]
    assert resend.Inboxes.get(ADDRESS)["id"] == inbox_id
    resend.Inboxes.update({"id": inbox_id, "from_name": "Shop Support"})
    assert resend.Inboxes.get(inbox_id)["from_name"] == "Shop Support"
    assert [each["id"] for each in resend.Inboxes.list()["data"]] == [inbox_id]

    write(sdk, "Order 42", Message_ID="<order-42@corp.io>")
    write(sdk, "Re: Order 42", In_Reply_To="<order-42@corp.io>")
    [thread] = until(
        lambda: [
            each
            for each in resend.Inboxes.Threads.list(ADDRESS, {"folders": ["inbox"]})["data"]
            if each["email_count"] == 2
        ],
        "both messages in one thread",
    )
    assert thread["subject"] == "Order 42" and thread["read"] is False
    [hit] = resend.Inboxes.Threads.search(inbox_id, {"query": "where", "from": ["ann@corp.io"]})[
        "data"
    ]
    assert hit["id"] == thread["id"] and hit["matched_email_id"]
    emails: list[Any] = resend.Inboxes.Threads.Emails.list(inbox_id, thread["id"])["data"]
    assert sorted(each["subject"] for each in emails) == ["Order 42", "Re: Order 42"]
    one: Any = resend.Inboxes.Threads.Emails.get(inbox_id, thread["id"], emails[0]["id"])
    assert one["direction"] == "inbound" and "Where is it?" in one["text"]

    reply = resend.Inboxes.Threads.Emails.reply(
        {"inbox_id": inbox_id, "thread_id": thread["id"], "email_id": one["id"],
         "text": "On its way."}
    )  # fmt: skip
    [sent] = until(
        lambda: [
            each
            for each in resend.Inboxes.Threads.Emails.list(inbox_id, thread["id"])["data"]
            if each["id"] == reply["id"]
        ],
        "the reply in the thread once it went out",
    )
    assert sent["direction"] == "outbound" and sent["subject"].startswith("Re: ")
    forwarded = resend.Inboxes.Threads.Emails.forward(
        {"inbox_id": ADDRESS, "thread_id": thread["id"], "email_id": one["id"],
         "to": "team@corp.io", "text": "FYI"}
    )  # fmt: skip
    assert resend.Emails.get(forwarded["id"])["subject"].startswith("Fwd: ")

    draft = resend.Inboxes.Drafts.create(
        {"inbox_id": inbox_id, "to": ["bo@corp.io"], "subject": "Invoice", "text": "Here."}
    )
    resend.Inboxes.Drafts.update({"inbox_id": inbox_id, "id": draft["id"], "cc": ["cy@corp.io"]})
    assert resend.Inboxes.Drafts.get(ADDRESS, draft["id"])["cc"] == ["cy@corp.io"]
    listed = resend.Inboxes.Drafts.list(inbox_id)["data"]
    assert [each["id"] for each in listed] == [draft["id"]]
    spare = resend.Inboxes.Drafts.create({"inbox_id": inbox_id, "text": "Not needed."})
    resend.Inboxes.Drafts.remove(inbox_id, spare["id"])
    sent_draft = resend.Inboxes.Drafts.send(inbox_id, draft["id"])
    assert resend.Inboxes.Drafts.get(inbox_id, draft["id"])["email_id"] == sent_draft["id"]

    urgent = resend.Inboxes.Labels.create({"inbox_id": ADDRESS, "name": "Urgent"})
    resend.Inboxes.Labels.update({"inbox_id": inbox_id, "id": urgent["id"], "color": "#E93D82"})
    [label] = resend.Inboxes.Labels.list(inbox_id)["data"]
    assert (label["name"], label["color"]) == ("Urgent", "#E93D82")
    ids = [urgent["id"]]
    added = resend.Inboxes.Threads.Labels.add(
        {"inbox_id": inbox_id, "thread_id": thread["id"], "labels": ids}
    )
    assert [each["name"] for each in added["data"]] == ["Urgent"]
    replaced = resend.Inboxes.Threads.Labels.set(
        {"inbox_id": inbox_id, "thread_id": thread["id"], "labels": ids}
    )
    assert [each["id"] for each in replaced["data"]] == ids
    left = resend.Inboxes.Threads.Labels.remove(inbox_id, thread["id"], urgent["id"])
    assert left["data"] == []
    resend.Inboxes.Labels.remove(inbox_id, urgent["id"])

    moved = resend.Inboxes.Threads.update(
        {"inbox_id": inbox_id, "id": thread["id"], "read": True, "folder": "archive"}
    )
    assert moved["folder"] == "archive" and moved["read"] is True
    assert resend.Inboxes.Threads.get(inbox_id, thread["id"])["folder"] == "archive"
    resend.Inboxes.Threads.remove(inbox_id, thread["id"])
    assert resend.Inboxes.Threads.get(inbox_id, thread["id"])["folder"] == "trash"

    resend.Inboxes.Agent.update(
        {"inbox_id": ADDRESS, "instructions": "Be kind.", "actions": ["add_labels"]}
    )
    agent = resend.Inboxes.Agent.get(inbox_id)
    assert (agent["instructions"], agent["actions"]) == ("Be kind.", ["add_labels"])

    assert resend.Inboxes.remove(inbox_id)["deleted"] is True
    try:
        resend.Inboxes.get(inbox_id)
    except resend.exceptions.ResendError as refused:
        assert refused.code == 404
    else:
        raise AssertionError("a removed inbox is gone")
