"""Inbound mail you can trust: a report changes only what it provably concerns, and every
envelope recipient gets their own copy (services/inbound/_reports.py, _storing.py)."""

# ruff: noqa: F811  (the ``inbox`` fixture is test_inbound's, taken as a parameter)

from __future__ import annotations

from prometheus_client import REGISTRY
from sqlalchemy import select

from mailbridge.mail.return_path import return_path_address
from mailbridge.services.kernel import instance_secret
from mailbridge.storage.tables import Contact, Email, EmailEvent, ReceivedEmail, Suppression
from tests.integration.email_factory import add_email
from tests.integration.test_inbound import Inbox, arf, dns, dsn, inbox, letter  # noqa: F401


async def return_path(inbox: Inbox, email_id: str, recipient: str | None = None) -> str:
    """The return path of the email's envelope to ``recipient`` (None: an envelope to
    several, as mail went out before recipients had envelopes of their own)."""
    secret = await instance_secret(inbox.context.database, inbox.context.settings)
    return return_path_address(secret, email_id, "send.shop.io", recipient)


async def attempted(inbox: Inbox, email_id: str, states: dict[str, str]) -> None:
    """The email as the delivery worker leaves it: sent, one envelope a recipient."""
    async with inbox.context.database.session() as session:
        email = await session.get(Email, email_id)
        assert email is not None
        email.status = email.last_event = "delivered"
        email.recipient_states = states
        await session.commit()


def unmatched(reason: str) -> float:
    labels = {"reason": reason}
    return REGISTRY.get_sample_value("mailbridge_inbound_unmatched_reports_total", labels) or 0.0


async def suppressed(inbox: Inbox) -> list[str]:
    async with inbox.context.database.session() as session:
        found = await session.scalars(
            select(Suppression.email).where(Suppression.team_id == inbox.tenant.team_id)
        )
        return list(found.all())


async def email_state(inbox: Inbox, email_id: str) -> tuple[str, list[str]]:
    async with inbox.context.database.session() as session:
        email = await session.get(Email, email_id)
        assert email is not None
        events = await session.scalars(
            select(EmailEvent.type).where(EmailEvent.email_id == email_id).order_by(EmailEvent.id)
        )
        return email.status, list(events.all())


def delay(email_id: str, recipient: str) -> bytes:
    """What Postfix sends while it keeps trying (RFC 3464 ``Action: delayed``)."""
    return (
        dsn(email_id, recipient)
        .replace(b"Action: failed\r\nStatus: 5.1.1", b"Action: delayed\r\nStatus: 4.4.1")
        .replace(b"Undelivered Mail Returned to Sender", b"Delayed Mail (still being retried)")
    )


async def test_a_bounce_to_a_real_return_path_naming_another_address_changes_nothing(
    inbox: Inbox,
) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    other = await add_email(inbox.context, inbox.domain, to=["ceo@corp.io"])
    before = unmatched("not_a_recipient")
    forged = dsn(sent.id, "ceo@corp.io")  # ann knows her return path; she names the ceo
    await inbox.deliver(forged, await return_path(inbox, sent.id), sender="ann@corp.io")
    assert await suppressed(inbox) == []
    assert (await email_state(inbox, sent.id))[0] == "queued"
    assert (await email_state(inbox, other.id))[0] == "queued"
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("unmatched_report", None)
    assert row.unmatched_reason == "the address it names was not a recipient of the email"
    assert unmatched("not_a_recipient") == before + 1
    found = (await inbox.client.get(f"/emails/receiving/{row.id}")).json()
    assert found["kind"] == "unmatched_report"
    assert found["unmatched_reason"] == row.unmatched_reason


async def test_a_complaint_naming_another_address_unsubscribes_nobody(inbox: Inbox) -> None:
    created = await inbox.client.post("/contacts", json={"email": "ceo@corp.io"})
    assert created.status_code == 201, created.text
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    before = unmatched("not_a_recipient")
    for to in (await return_path(inbox, sent.id), "hello@shop.io"):
        await inbox.deliver(arf(sent.id, "ceo@corp.io"), to, sender="ann@corp.io")
    assert await suppressed(inbox) == []
    contact = (await inbox.client.get("/contacts/ceo@corp.io")).json()
    assert contact["unsubscribed"] is False
    assert (await email_state(inbox, sent.id))[0] == "queued"
    assert [row.kind for row in await inbox.rows()] == ["unmatched_report"] * 2
    assert unmatched("not_a_recipient") == before + 2


async def test_a_guessed_return_path_is_a_forgery_and_changes_nothing(inbox: Inbox) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    real = await return_path(inbox, sent.id)
    guesses = [
        f"bounces+{sent.id}-{'a' * 16}@send.shop.io",  # a made-up tag
        real.replace(sent.id, sent.id[:-1] + ("0" if sent.id[-1] != "0" else "1")),
    ]
    other = await add_email(inbox.context, inbox.domain, to=["bo@corp.io"])
    guesses.append(real.replace(sent.id, other.id))  # ann's tag on bo's email
    before = unmatched("forged_return_path")
    refused = 0
    for guess in guesses:
        for report in (dsn(sent.id, "ann@corp.io"), arf(sent.id, "ann@corp.io")):
            try:
                await inbox.deliver(report, guess, sender="x@evil.io")
            except Exception:  # an email id that does not exist reaches no team: 550
                refused += 1
    assert refused == 2  # the second guess names no email at all
    assert await suppressed(inbox) == []
    assert (await email_state(inbox, sent.id))[0] == "queued"
    rows = await inbox.rows()
    assert [row.kind for row in rows] == ["unmatched_report"] * 4
    assert {row.unmatched_reason for row in rows} == {"the return path's tag does not verify"}
    assert unmatched("forged_return_path") == before + 4


async def test_a_feedback_report_about_another_domains_message_id_changes_nothing(
    inbox: Inbox,
) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    report = arf(sent.id, "ann@corp.io").replace(
        f"Message-ID: <{sent.id}@shop.io>".encode(), f"Message-ID: <{sent.id}@evil.io>".encode()
    )
    before = unmatched("no_email")
    await inbox.deliver(report, "hello@shop.io", sender="fbl@mail.net")
    assert await suppressed(inbox) == []
    [row] = await inbox.rows()
    assert row.kind == "unmatched_report" and unmatched("no_email") == before + 1


async def test_a_complaint_that_names_nobody_counts_only_for_a_single_recipient(
    inbox: Inbox,
) -> None:
    alone = await add_email(inbox.context, inbox.domain, to=["ann@corp.io"])
    shared = await add_email(inbox.context, inbox.domain, to=["bo@corp.io"], cc=["cy@corp.io"])
    for sent in (alone, shared):
        redacted = arf(sent.id, "ann@corp.io").replace(b"Original-Rcpt-To: ann@corp.io\r\n", b"")
        await inbox.deliver(redacted, await return_path(inbox, sent.id), sender="fbl@mail.net")
    assert await suppressed(inbox) == ["ann@corp.io"]
    assert (await email_state(inbox, alone.id))[0] == "complained"
    assert (await email_state(inbox, shared.id))[0] == "queued"
    kinds = {row.email_id: row.kind for row in await inbox.rows()}
    assert kinds == {alone.id: "complaint", None: "unmatched_report"}


async def test_a_bounce_acts_only_on_the_recipients_of_the_email(inbox: Inbox) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["gone@corp.io"])
    report = dsn(sent.id, "gone@corp.io").replace(
        b"\r\n--B\r\nContent-Type: text/rfc822-headers",
        b"\r\nFinal-Recipient: rfc822; ceo@corp.io\r\nAction: failed\r\nStatus: 5.1.1\r\n"
        b"\r\n--B\r\nContent-Type: text/rfc822-headers",
    )
    await inbox.deliver(report, await return_path(inbox, sent.id), sender="mailer-daemon@x.io")
    assert await suppressed(inbox) == ["gone@corp.io"]
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("bounce", sent.id)


async def test_a_return_path_from_before_tags_counts_by_the_message_id_on_the_teams_domain(
    inbox: Inbox,
) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["gone@corp.io"])
    await inbox.deliver(dsn(sent.id, "gone@corp.io"), f"bounces+{sent.id}@send.shop.io")
    assert await suppressed(inbox) == ["gone@corp.io"]
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("bounce", sent.id)


async def test_a_delay_notice_is_a_delay_never_a_bounce(inbox: Inbox) -> None:
    sent = await add_email(inbox.context, inbox.domain, to=["slow@corp.io"])
    async with inbox.context.database.session() as session:
        email = await session.get(Email, sent.id)
        assert email is not None
        email.status = email.last_event = "delivered"  # handed to the relay
        await session.commit()
    await inbox.deliver(delay(sent.id, "slow@corp.io"), await return_path(inbox, sent.id))
    status, events = await email_state(inbox, sent.id)
    # The status stays: "delivery_delayed" would put the email back in mailbridge's queue.
    assert status == "delivered" and events[-1] == "delivery_delayed"
    assert await suppressed(inbox) == []
    assert len(await inbox.activity("email.delivery_delayed")) == 1
    assert await inbox.activity("email.bounced") == []
    [row] = await inbox.rows()
    assert (row.kind, row.email_id) == ("delay", sent.id)


async def test_identical_bytes_to_two_recipients_are_two_received_emails(inbox: Inbox) -> None:
    raw = letter(to="hello@shop.io, sales@shop.io").as_bytes()
    await inbox.deliver(raw, "hello@shop.io")  # two transactions, the same bytes
    await inbox.deliver(raw, "sales@shop.io")
    await inbox.deliver(raw, "sales@shop.io")  # a retry after a lost 250: stored once
    rows = await inbox.rows()
    assert sorted(row.envelope_to[0] for row in rows) == ["hello@shop.io", "sales@shop.io"]
    assert len(await inbox.activity("email.received")) == 2
    await inbox.deliver(letter().as_bytes(), "info@shop.io", "Support@shop.io")  # one, two RCPTs
    rows = await inbox.rows()
    assert len(rows) == 4 and len(await inbox.activity("email.received")) == 4
    assert sorted(row.recipient for row in rows)[-2:] == ["sales@shop.io", "support@shop.io"]
    listed = (await inbox.client.get("/emails/receiving")).json()["data"]
    assert len(listed) == 4


async def test_a_contact_of_the_recipient_is_unsubscribed_by_a_real_complaint(
    inbox: Inbox,
) -> None:
    created = await inbox.client.post("/contacts", json={"email": "ann@corp.io"})
    assert created.status_code == 201, created.text
    sent = await add_email(inbox.context, inbox.domain, to=["Ann@Corp.io"])
    await inbox.deliver(arf(sent.id, "ann@corp.io"), await return_path(inbox, sent.id))
    async with inbox.context.database.session() as session:
        contact = await session.scalar(select(Contact).where(Contact.email == "ann@corp.io"))
        assert contact is not None and contact.unsubscribed is True
        row = await session.scalar(select(ReceivedEmail))
        assert row is not None and row.kind == "complaint"


async def test_a_co_recipient_cannot_speak_for_another_with_her_own_return_path(
    inbox: Inbox,
) -> None:
    """Ann and Bo got one email, each in an envelope of their own: Ann's return path
    carries a tag for Ann alone. A report to it naming Bo changes nothing; one naming
    Ann counts for Ann; the email's tag without a recipient is refused for mail sent
    with envelopes of their own."""
    sent = await add_email(inbox.context, inbox.domain, to=["ann@corp.io", "bo@corp.io"])
    await attempted(inbox, sent.id, {"ann@corp.io": "delivered", "bo@corp.io": "delivered"})
    anns = await return_path(inbox, sent.id, "ann@corp.io")
    assert anns != await return_path(inbox, sent.id, "bo@corp.io")
    not_a_recipient, forged = unmatched("not_a_recipient"), unmatched("forged_return_path")

    await inbox.deliver(dsn(sent.id, "bo@corp.io"), anns, sender="ann@corp.io")
    await inbox.deliver(arf(sent.id, "bo@corp.io"), anns, sender="ann@corp.io")
    await inbox.deliver(dsn(sent.id, "bo@corp.io"), await return_path(inbox, sent.id))
    assert await suppressed(inbox) == []
    assert unmatched("not_a_recipient") == not_a_recipient + 2
    assert unmatched("forged_return_path") == forged + 1
    async with inbox.context.database.session() as session:
        email = await session.get(Email, sent.id)
        assert email is not None and email.status == "delivered"
        assert email.recipient_states == {"ann@corp.io": "delivered", "bo@corp.io": "delivered"}

    await inbox.deliver(dsn(sent.id, "ann@corp.io"), anns, sender="mailer-daemon@corp.io")
    assert await suppressed(inbox) == ["ann@corp.io"]
    async with inbox.context.database.session() as session:
        email = await session.get(Email, sent.id)
        assert email is not None and email.status == "bounced"
        assert email.recipient_states == {"ann@corp.io": "bounced", "bo@corp.io": "delivered"}
    kinds = [row.kind for row in await inbox.rows()]
    assert sorted(kinds) == ["bounce"] + ["unmatched_report"] * 3
    recipients = (await inbox.client.get(f"/emails/{sent.id}")).json()["recipients"]
    assert recipients == [
        {"email": "ann@corp.io", "status": "bounced"},
        {"email": "bo@corp.io", "status": "delivered"},
    ]
