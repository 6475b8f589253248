"""Inbound mail through a real SMTP conversation (aiosmtplib → the listener on loopback):
stored rows first, listed under /emails/receiving, bounces, complaints and replies."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import aiosmtplib
import httpx
import pytest
from sqlalchemy import insert, select

from mailbridge.api.app import create_app
from mailbridge.mail import dkim
from mailbridge.services import inbound
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import (
    ActivityEvent,
    Domain,
    Email,
    EmailEvent,
    QuotaUsage,
    ReceivedEmail,
    Suppression,
)
from mailbridge.storage.types import new_id
from tests.integration.conftest import USER_AGENT, Tenant, Tenants
from tests.integration.dns_server import DnsServer
from tests.integration.email_factory import add_email
from tests.integration.test_auth import assert_error
from tests.smtp_listener import write_self_signed


@dataclass
class Inbox:
    context: ServiceContext
    client: httpx.AsyncClient
    tenant: Tenant
    domain: Domain
    port: int
    dns: DnsServer

    async def deliver(
        self, message: EmailMessage | bytes, *recipients: str, sender: str = "ann@corp.io"
    ) -> None:
        await aiosmtplib.send(
            message, hostname="127.0.0.1", port=self.port, sender=sender,
            recipients=list(recipients),
        )  # fmt: skip

    async def rows(self) -> list[ReceivedEmail]:
        async with self.context.database.session() as session:
            found = await session.scalars(select(ReceivedEmail).order_by(ReceivedEmail.id))
            return list(found.all())

    async def activity(self, type_: str) -> list[ActivityEvent]:
        async with self.context.database.session() as session:
            found = await session.scalars(select(ActivityEvent).where(ActivityEvent.type == type_))
            return list(found.all())


@pytest.fixture
async def dns() -> AsyncIterator[DnsServer]:
    server = DnsServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def inbox(context: ServiceContext, dns: DnsServer) -> AsyncIterator[Inbox]:
    # Authentication looks up DKIM keys and DMARC records on the loopback DNS server.
    settings = context.settings.model_copy(update={"dns_nameserver": dns.address})
    context = ServiceContext(settings=settings, database=context.database, clock=context.clock)
    tenant = await Tenants(context).create(plan="pro")
    async with context.database.session() as session:
        domain = await create_domain(
            session, context.clock, context.settings, tenant.team_id, "shop.io",
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        await session.commit()
    server, _handler = await inbound.start_listener(context, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    app = create_app(context=context)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://mailbridge.test",
                headers={"User-Agent": USER_AGENT, **tenant.headers},
            ) as client:  # fmt: skip
                yield Inbox(context, client, tenant, domain, port, dns)
    finally:
        server.close()


def letter(to: str = "hello@shop.io", **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Ann <ann@corp.io>"
    message["To"] = to
    message["Subject"] = "A question"
    message["Message-ID"] = make_msgid(domain="corp.io")
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content("Plain words")
    message.add_alternative("<p>HTML words</p>", subtype="html")
    return message


async def test_a_received_message_is_listed_with_its_attachments_byte_identical(
    inbox: Inbox,
) -> None:
    message = letter()
    pdf = bytes(range(256)) * 40
    message.add_attachment(pdf, maintype="application", subtype="pdf", filename="quote.pdf")
    await inbox.deliver(message, "hello@shop.io")

    listed = (await inbox.client.get("/emails/receiving")).json()
    assert listed["object"] == "list" and listed["has_more"] is False
    [item] = listed["data"]
    assert (item["from"], item["to"], item["subject"]) == (
        "Ann <ann@corp.io>",
        ["hello@shop.io"],
        "A question",
    )
    found = (await inbox.client.get(f"/emails/receiving/{item['id']}")).json()
    assert found["text"].strip() == "Plain words"
    assert found["html"].strip() == "<p>HTML words</p>"
    assert found["envelope_to"] == ["hello@shop.io"]
    raw = await inbox.client.get(found["raw_url"].removeprefix(inbox.context.settings.public_url))
    assert raw.status_code == 200
    assert b"Subject: A question" in raw.content

    attachments = await inbox.client.get(
        f"/emails/receiving/{item['id']}/attachments", params={"content": "true"}
    )
    [attachment] = attachments.json()["data"]
    assert (attachment["filename"], attachment["size"]) == ("quote.pdf", len(pdf))
    assert base64.b64decode(attachment["content"]) == pdf
    downloaded = await inbox.client.get(
        attachment["download_url"].removeprefix(inbox.context.settings.public_url),
        headers={"Authorization": ""},
    )
    assert downloaded.content == pdf
    assert [event.data["email_id"] for event in await inbox.activity("email.received")] == [
        item["id"]
    ]


async def test_received_mail_in_resends_receiving_shape(inbox: Inbox) -> None:
    """What Resend's SDKs read: `object: "email"`, bcc, reply_to, received_for, the
    attachments on list items too, `raw.download_url`, one attachment by id."""
    message = letter(reply_to="Ann's desk <desk@corp.io>", bcc="Boss <boss@shop.io>")
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="a.pdf")
    await inbox.deliver(message.as_bytes(), "hello@shop.io")  # as bytes: a Bcc line kept
    [item] = (await inbox.client.get("/emails/receiving")).json()["data"]
    assert item["object"] == "email"
    assert item["reply_to"] == ["Ann's desk <desk@corp.io>"]
    assert item["bcc"] == ["Boss <boss@shop.io>"] and item["received_for"] == ["hello@shop.io"]
    [listed_attachment] = item["attachments"]
    assert listed_attachment == {
        "id": listed_attachment["id"], "filename": "a.pdf", "content_type": "application/pdf",
        "content_id": None, "content_disposition": "attachment", "size": 8,
    }  # fmt: skip
    found = (await inbox.client.get(f"/emails/receiving/{item['id']}")).json()
    assert found["object"] == "email" and found["received_for"] == ["hello@shop.io"]
    assert found["raw"] == {
        "download_url": found["raw_url"],
        "expires_at": found["raw_url_expires_at"],
    }
    raw = await inbox.client.get(
        found["raw"]["download_url"].removeprefix(inbox.context.settings.public_url),
        headers={"Authorization": ""},
    )
    assert raw.status_code == 200 and b"Subject: A question" in raw.content

    path = f"/emails/receiving/{item['id']}/attachments/{listed_attachment['id']}"
    single = (await inbox.client.get(path, params={"content": "true"})).json()
    assert single["object"] == "attachment" and base64.b64decode(single["content"]) == b"%PDF-1.4"
    assert "content" not in (await inbox.client.get(path)).json()

    await inbox.deliver(letter(), "hello@shop.io")  # no Reply-To, no Bcc, no attachment
    newest = (await inbox.client.get("/emails/receiving")).json()["data"][0]
    assert (newest["reply_to"], newest["bcc"], newest["attachments"]) == (None, None, [])
    other = await Tenants(inbox.context).create()
    assert_error(await inbox.client.get(path, headers=other.headers), 404, "not_found")
    for odd in ("nope", new_id()):
        odd_path = f"/emails/receiving/{item['id']}/attachments/{odd}"
        assert_error(await inbox.client.get(odd_path), 404, "not_found")
    elsewhere = f"/emails/receiving/{newest['id']}/attachments/{listed_attachment['id']}"
    assert_error(await inbox.client.get(elsewhere), 404, "not_found")


async def test_an_attachment_whose_own_blob_is_lost_or_short_is_read_from_its_message(
    inbox: Inbox,
) -> None:
    # An attachment's own blob is a cache written after the 250 without a sync; the raw
    # message's blob, synced before it, is what counts.
    message = letter()
    csv = b"sku,price\n" + b"A-1,10\n" * 500
    message.add_attachment(csv, maintype="text", subtype="csv", filename="prices.csv")
    await inbox.deliver(message, "hello@shop.io")
    [row] = await inbox.rows()
    path = f"/emails/receiving/{row.id}/attachments"
    async with asyncio.timeout(30):  # the cache is written in the background
        while True:
            stored = sorted((inbox.context.settings.data_dir / "blobs").rglob("*"))
            blobs = [p for p in stored if p.is_file()]
            if len(blobs) == 2 and not [p for p in blobs if p.name.endswith(".tmp")]:
                break
            await asyncio.sleep(0.05)
    assert len(blobs) == 2 and not [p for p in blobs if p.name.endswith(".tmp")]
    [own] = [p for p in blobs if p.read_bytes() == csv]
    for damage in (lambda: own.write_bytes(csv[:100]), own.unlink):
        damage()
        [again] = (await inbox.client.get(path, params={"content": "true"})).json()["data"]
        assert base64.b64decode(again["content"]) == csv
        assert own.read_bytes() == csv  # and cached again


async def test_an_unknown_recipient_is_refused_and_nothing_is_stored(inbox: Inbox) -> None:
    with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
        await inbox.deliver(letter("someone@elsewhere.io"), "someone@elsewhere.io")
    assert refused.value.recipients[0].code == 550
    assert await inbox.rows() == []


async def test_a_team_over_its_quota_is_asked_to_retry_and_nothing_is_stored(
    inbox: Inbox,
) -> None:
    free = await Tenants(inbox.context).create(plan="free")
    async with inbox.context.database.session() as session:
        await create_domain(
            session, inbox.context.clock, inbox.context.settings, free.team_id, "free.io",
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        bucket = inbox.context.clock.now().replace(minute=0, second=0, microsecond=0)
        await session.execute(
            insert(QuotaUsage).values(team_id=free.team_id, bucket_start=bucket, count=100)
        )
        await session.commit()
    with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
        await inbox.deliver(letter("hi@free.io"), "hi@free.io")
    assert refused.value.recipients[0].code == 452
    assert await inbox.rows() == []


def dsn(email_id: str, recipient: str) -> bytes:
    """What Postfix sends back for a recipient that does not exist."""
    return (
        "From: Mail Delivery System <MAILER-DAEMON@mx.corp.io>\r\n"
        f"To: bounces+{email_id}@send.shop.io\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n'
        "\r\n--B\r\nContent-Type: text/plain\r\n\r\n"
        "The mail system could not deliver your message.\r\n"
        "\r\n--B\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.corp.io\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: failed\r\nStatus: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 No such user\r\n"
        "\r\n--B\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"Message-ID: <{email_id}@shop.io>\r\nSubject: Hello\r\n"
        "\r\n--B--\r\n"
    ).encode()


async def test_a_bounce_to_the_return_path_marks_the_email_and_suppresses_the_address(
    inbox: Inbox,
) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["gone@corp.io"])
    await inbox.deliver(
        dsn(sent.id, "gone@corp.io"),
        f"bounces+{sent.id}@send.shop.io",
        sender="mailer-daemon@mx.corp.io",
    )
    async with inbox.context.database.session() as session:
        email = await session.get(Email, sent.id)
        assert email is not None and email.status == "bounced"
        events = await session.scalars(
            select(EmailEvent).where(EmailEvent.email_id == sent.id, EmailEvent.type == "bounced")
        )
        [event] = events.all()
        assert event.data["bounce"]["type"] == "hard"
        assert event.data["bounce"]["status"] == "5.1.1"
        listed = await session.scalars(
            select(Suppression.email).where(Suppression.team_id == inbox.tenant.team_id)
        )
        assert list(listed.all()) == ["gone@corp.io"]
    assert len(await inbox.activity("email.bounced")) == 1
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("bounce", sent.id)


async def test_a_reply_is_recorded_on_the_email_it_answers(inbox: Inbox) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    await inbox.deliver(letter(In_Reply_To=sent.message_id), "hello@shop.io")
    async with inbox.context.database.session() as session:
        replied = await session.scalars(
            select(EmailEvent).where(EmailEvent.email_id == sent.id, EmailEvent.type == "replied")
        )
        assert len(replied.all()) == 1
        email = await session.get(Email, sent.id)
        assert email is not None and email.status == "queued"  # a reply leaves the status
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("reply", sent.id)
    auto = letter(In_Reply_To=sent.message_id, Auto_Submitted="auto-replied")
    await inbox.deliver(auto, "hello@shop.io")
    assert len(await inbox.activity("email.replied")) == 1  # an auto-reply is no reply


async def test_another_teams_received_email_is_not_found(inbox: Inbox) -> None:
    await inbox.deliver(letter(), "hello@shop.io")
    [row] = await inbox.rows()
    other = await Tenants(inbox.context).create()
    for path in (f"/emails/receiving/{row.id}", f"/emails/receiving/{row.id}/attachments"):
        answer = await inbox.client.get(path, headers=other.headers)
        assert_error(answer, 404, "not_found")
    assert_error(await inbox.client.get(f"/emails/receiving/{new_id()}"), 404, "not_found")


def arf(email_id: str, recipient: str) -> bytes:
    """What a mailbox provider's feedback loop sends (RFC 5965)."""
    return (
        "From: Feedback Loop <feedback@fbl.mail.net>\r\n"
        "To: hello@shop.io\r\n"
        "Subject: Abuse report\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=feedback-report; boundary="F"\r\n'
        "\r\n--F\r\nContent-Type: text/plain\r\n\r\nA user marked this as spam.\r\n"
        "\r\n--F\r\nContent-Type: message/feedback-report\r\n\r\n"
        "Feedback-Type: abuse\r\nUser-Agent: FBL/1.0\r\nVersion: 1\r\n"
        f"Original-Rcpt-To: {recipient}\r\n"
        "\r\n--F\r\nContent-Type: message/rfc822\r\n\r\n"
        f"Return-Path: <bounces+{email_id}@send.shop.io>\r\n"
        f"Message-ID: <{email_id}@shop.io>\r\nFrom: news@shop.io\r\nTo: {recipient}\r\n"
        "Subject: Hello\r\n\r\nHello\r\n"
        "\r\n--F--\r\n"
    ).encode()


async def test_a_complaint_suppresses_and_unsubscribes(inbox: Inbox) -> None:
    created = await inbox.client.post("/contacts", json={"email": "ann@corp.io"})
    assert created.status_code == 201, created.text
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    await inbox.deliver(arf(sent.id, "ann@corp.io"), "hello@shop.io", sender="fbl@mail.net")
    async with inbox.context.database.session() as session:
        email = await session.get(Email, sent.id)
        assert email is not None and email.status == "complained"
        listed = await session.scalars(select(Suppression.reason))
        assert list(listed.all()) == ["complained"]
    contact = (await inbox.client.get("/contacts/ann@corp.io")).json()
    assert contact["unsubscribed"] is True
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("complaint", sent.id)


async def test_a_receiving_domain_shows_the_mx_to_publish(inbox: Inbox) -> None:
    created = await inbox.client.post("/domains", json={"name": "mail.io", "receiving": True})
    assert created.status_code == 201, created.text
    assert created.json()["receiving"] is True
    receiving = [r for r in created.json()["records"] if r["record"] == "Receiving"]
    assert [(r["name"], r["type"], r["priority"]) for r in receiving] == [("@", "MX", 10)]
    changed = await inbox.client.patch(
        f"/domains/{created.json()['id']}", json={"receiving": False}
    )
    assert changed.json()["receiving"] is False
    assert not [r for r in changed.json()["records"] if r["record"] == "Receiving"]


async def test_spf_dkim_and_dmarc_results_are_recorded(inbox: Inbox) -> None:
    keys = await asyncio.to_thread(dkim.generate_key_pair)
    inbox.dns.zone.add_txt("s1._domainkey.corp.io", dkim.txt_value(keys.public_key))
    inbox.dns.zone.add_txt("_dmarc.corp.io", "v=DMARC1; p=reject")
    signed = dkim.sign(letter().as_bytes(), "corp.io", "s1", keys.private_key_pem)
    await inbox.deliver(signed, "hello@shop.io")
    tampered = signed.replace(b"Plain words", b"Plain wordz")
    await inbox.deliver(tampered, "hello@shop.io")
    unsigned = letter()
    unsigned.replace_header("From", "Bo <bo@nodmarc.io>")
    await inbox.deliver(unsigned, "hello@shop.io")
    results = [(row.spf, row.dkim, row.dmarc) for row in await inbox.rows()]
    # SPF says nothing about a loopback peer; DMARC passes on the aligned DKIM pass.
    assert results == [
        ("none", "pass", "pass"), ("none", "fail", "fail"), ("none", "none", "none")
    ]  # fmt: skip


async def test_the_listener_offers_starttls_with_a_certificate(
    inbox: Inbox, tmp_path: Path
) -> None:
    cert, key = write_self_signed(tmp_path)
    settings = inbox.context.settings.model_copy(
        update={"inbound_tls_cert": str(cert), "inbound_tls_key": str(key)}
    )
    context = ServiceContext(settings, inbox.context.database, inbox.context.clock)
    server, _handler = await inbound.start_listener(context, "127.0.0.1", 0)
    try:
        async with aiosmtplib.SMTP(
            hostname="127.0.0.1", port=server.sockets[0].getsockname()[1], start_tls=True,
            validate_certs=False,
        ) as smtp:  # fmt: skip
            assert smtp.get_transport_info("sslcontext") is not None
            await smtp.send_message(letter(), sender="ann@corp.io", recipients=["hello@shop.io"])
    finally:
        server.close()
    assert len(await inbox.rows()) == 1


async def test_the_same_message_sent_again_is_stored_once(inbox: Inbox) -> None:
    raw = letter().as_bytes()
    await inbox.deliver(raw, "hello@shop.io")
    await inbox.deliver(raw, "hello@shop.io")  # a sender that never heard the first 250
    assert len(await inbox.rows()) == 1
    assert len(await inbox.activity("email.received")) == 1
