"""The Python SDK's methods no other acceptance test calls, on a real ``serve``: event
definitions, the request log, received mail and its attachments, contact imports, a
contact's segment removal, a broadcast's cancellation, the SDK's own webhook verifier,
the audiences it deprecates, and the two key writes mailbridge keeps to the dashboard."""

from __future__ import annotations

import json
import smtplib
import time
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

import pytest
import resend
import resend.exceptions
from standardwebhooks import Webhook

from tests.acceptance.conftest import Server, admin

WAIT = 60.0


def until(found: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while True:
        value = found()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_sdk_manages_event_definitions(sdk: Server) -> None:
    created = resend.Events.create({"name": "order.paid", "schema": {"amount": "number"}})
    assert created["object"] == "event"
    by_name = resend.Events.get("order.paid")
    assert by_name["id"] == created["id"] and by_name["schema"] == {"amount": "number"}
    assert resend.Events.get(created["id"])["name"] == "order.paid"
    changed = resend.Events.update({"identifier": "order.paid", "schema": {"total": "string"}})
    assert changed["id"] == created["id"]
    assert resend.Events.get("order.paid")["schema"] == {"total": "string"}
    listed = resend.Events.list({"limit": 10})
    assert [item["name"] for item in listed["data"]] == ["order.paid"]
    removed = resend.Events.remove("order.paid")
    assert removed["id"] == created["id"] and removed["deleted"] is True
    with pytest.raises(resend.exceptions.ResendError) as gone:
        resend.Events.get("order.paid")
    assert gone.value.code == 404


def test_sdk_reads_the_request_log(sdk: Server) -> None:
    resend.Domains.list()
    logs = until(lambda: resend.Logs.list({"limit": 20})["data"], "a logged request")
    [entry] = [item for item in logs if item.get("endpoint", item.get("path")) == "/domains"][:1]
    one = resend.Logs.get(entry["id"])
    assert one["id"] == entry["id"] and one["method"] == "GET"


def test_sdk_reads_received_mail_and_its_attachments(sdk: Server) -> None:
    admin("domains", "add", "shop.io", "--verified", "--receiving", env=sdk.env)
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ann@corp.io", "hi@shop.io", "Quote"
    message.set_content("Here it is.")
    message.add_attachment(b"%PDF-1.4 quote", maintype="application", subtype="pdf",
                           filename="quote.pdf")  # fmt: skip
    host, _, port = sdk.env["MAILBRIDGE_INBOUND_SMTP"].rpartition(":")
    with smtplib.SMTP(host, int(port), timeout=30) as smtp:
        smtp.send_message(message)
    [listed] = until(lambda: resend.Emails.Receiving.list()["data"], "the received email")
    assert listed["object"] == "email" and listed["subject"] == "Quote"
    received: Any = resend.Emails.Receiving.get(listed["id"])
    assert received["from"] == "ann@corp.io" and "Here it is." in received["text"]
    [attachment] = resend.Emails.Receiving.Attachments.list(listed["id"])["data"]
    assert attachment["filename"] == "quote.pdf"
    one = resend.Emails.Receiving.Attachments.get(listed["id"], attachment["id"])
    assert one["id"] == attachment["id"] and one["download_url"].startswith("http")


def test_sdk_imports_contacts_from_csv(sdk: Server) -> None:
    resend.ContactProperties.create({"key": "plan", "type": "string"})
    segment = resend.Segments.create({"name": "From the CSV"})
    created = resend.Contacts.Imports.create({
        "file": b"email,first_name,plan\nann@corp.io,Ann,pro\nnot-an-address,X,\n",
        "filename": "people.csv",
        "on_conflict": "upsert",
        "segments": [{"id": segment["id"]}],
    })  # fmt: skip
    assert created["object"] == "contact_import"
    job = until(
        lambda: (
            (found := resend.Contacts.Imports.get(created["id"]))["status"] == "completed" and found
        ),
        "the import written",
    )
    assert job["counts"] == {"total": 2, "created": 1, "updated": 0, "skipped": 0, "failed": 1}
    assert resend.Contacts.get(email="ann@corp.io")["first_name"] == "Ann"
    listed = resend.Contacts.Imports.list({"status": "completed"})
    assert [item["id"] for item in listed["data"]] == [created["id"]]
    # ContactImports is the same class under its own name
    assert resend.ContactImports.get(created["id"])["id"] == created["id"]


def test_sdk_takes_a_contact_out_of_a_segment(sdk: Server) -> None:
    contact = resend.Contacts.create({"email": "ann@corp.io"})
    segment = resend.Segments.create({"name": "VIP"})
    resend.Contacts.Segments.add({"segment_id": segment["id"], "contact_id": contact["id"]})
    removed = resend.Contacts.Segments.remove(
        {"segment_id": segment["id"], "contact_id": contact["id"]}
    )
    assert removed["deleted"] is True
    assert resend.Contacts.Segments.list({"contact_id": contact["id"]})["data"] == []


def test_sdk_cancels_a_scheduled_broadcast(sdk: Server) -> None:
    admin("domains", "add", "shop.io", "--verified", env=sdk.env)
    segment = resend.Segments.create({"name": "Readers"})
    resend.Contacts.create({"email": "ann@corp.io", "segments": [{"id": segment["id"]}]})
    created = resend.Broadcasts.create({
        "segment_id": segment["id"], "from": "Shop <news@shop.io>", "subject": "Later",
        "html": "<p>Later</p>",
    })  # fmt: skip
    resend.Broadcasts.send({"broadcast_id": created["id"], "scheduled_at": "in 2 days"})
    cancelled = resend.Broadcasts.cancel(created["id"])
    assert cancelled["id"] == created["id"]
    assert resend.Broadcasts.get(created["id"])["status"] in {"canceled", "draft"}


def test_sdk_verifies_a_signed_payload_with_its_own_verifier(sdk: Server) -> None:
    hook = resend.Webhooks.create(
        {"endpoint": "https://hooks.example/mailbridge", "events": ["email.sent"]}
    )
    secret = hook["signing_secret"]
    body = json.dumps({"type": "email.sent", "created_at": "2026-11-28T00:00:00.000Z",
                       "data": {"email_id": "x"}})  # fmt: skip
    # Signed as mailbridge signs a delivery (the standardwebhooks package, one secret).
    signed_at = datetime.now(UTC)  # one instant for the signature and its header
    signed = Webhook(secret).sign("msg_1", signed_at, body)
    headers: Any = {
        "id": "msg_1",
        "timestamp": str(int(signed_at.timestamp())),
        "signature": signed,
    }
    event = resend.Webhooks.verify({"payload": body, "headers": headers, "webhook_secret": secret})
    assert event["type"] == "email.sent"
    with pytest.raises(ValueError, match="signature"):
        resend.Webhooks.verify(
            {"payload": body + " ", "headers": headers, "webhook_secret": secret}
        )


def test_sdk_audiences_are_segments_and_key_writes_stay_in_the_dashboard(sdk: Server) -> None:
    with pytest.warns(DeprecationWarning):
        audience = resend.Audiences.create({"name": "Old style"})
    with pytest.warns(DeprecationWarning):
        assert resend.Audiences.get(audience["id"])["name"] == "Old style"
    with pytest.warns(DeprecationWarning):
        assert [item["id"] for item in resend.Audiences.list()["data"]] == [audience["id"]]
    with pytest.warns(DeprecationWarning):
        assert resend.Audiences.remove(audience["id"])["deleted"] is True
    key_id = resend.ApiKeys.list()["data"][0]["id"]
    with pytest.raises(resend.exceptions.ResendError) as refused:
        resend.ApiKeys.update({"id": key_id, "name": "x"})
    assert refused.value.code == 403 and refused.value.error_type == "dashboard_only"
    with pytest.raises(resend.exceptions.ResendError) as refused:
        resend.ApiKeys.remove(key_id)
    assert refused.value.code == 403 and refused.value.error_type == "dashboard_only"
