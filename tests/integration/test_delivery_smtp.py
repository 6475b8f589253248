"""Delivery through a real SMTP listener on loopback: the message, its DKIM signature,
retries after temporary failures, bounces after permanent ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import dkim as dkimpy
import dns.resolver as dns_resolver
import pytest
from sqlalchemy import select

from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.mail.providers.receipts import ReceiptBook, receipt_filed
from mailbridge.mail.return_path import return_path_address
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services import delivery
from mailbridge.services.delivery._queue import RetryPolicy
from mailbridge.services.domains._records import expected_records
from mailbridge.services.email import email_view, record_open
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Domain, Email, EmailEvent, Suppression
from tests.integration.conftest import Tenant, Tenants
from tests.integration.dns_server import ThreadedDnsServer
from tests.integration.email_factory import add_domain, add_email, load_email
from tests.smtp_listener import Listener, free_port, server_tls_context, smtp_listener


@pytest.fixture(params=[False, True], ids=["one-command-at-a-time", "pipelining"])
def pipelining(request: pytest.FixtureRequest) -> bool:
    """Every test runs against a relay without PIPELINING and one with it (RFC 2920)."""
    return bool(request.param)


@pytest.fixture
def listener(pipelining: bool) -> Iterator[Listener]:
    with smtp_listener(pipelining=pipelining) as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_context(settings: Settings, database: Database, clock: FakeClock) -> ServiceContext:
    return ServiceContext(settings=settings, database=database, clock=clock)


@pytest.fixture
async def shop(fake_context: ServiceContext) -> Domain:
    tenant: Tenant = await Tenants(fake_context).create()
    return await add_domain(fake_context, tenant.team_id)


@pytest.fixture
async def worker(fake_context: ServiceContext, listener: Listener) -> AsyncIterator[DeliveryWorker]:
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=2)
    async with DeliveryWorker(fake_context, provider=provider) as running:
        yield running


@pytest.fixture
def dns() -> Iterator[ThreadedDnsServer]:
    server = ThreadedDnsServer()
    server.start()
    yield server
    server.stop()


def publish(
    dns: ThreadedDnsServer, domain: Domain, settings: Settings
) -> Callable[..., bytes | None]:
    """Publish the domain's records as GET /domains shows them; a dkimpy ``dnsfunc``
    that asks the loopback DNS server."""
    dns.zone.publish(
        domain.name, [record.view("verified") for record in expected_records(domain, settings)]
    )
    resolver = dns_resolver.Resolver(configure=False)
    host, port = dns.address.split(":")
    resolver.nameservers, resolver.port = [host], int(port)

    def dnsfunc(name: bytes, timeout: int = 5) -> bytes | None:
        try:
            answer = resolver.resolve(name.decode(), "TXT", lifetime=timeout)
        except dns_resolver.NXDOMAIN:
            return None
        return b"".join(b"".join(rdata.strings) for rdata in answer)

    return dnsfunc


async def event_data(context: ServiceContext, email_id: str) -> list[dict[str, Any]]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(EmailEvent.data)
            .where(EmailEvent.email_id == email_id)
            .order_by(EmailEvent.created_at, EmailEvent.id)
        )
        return [dict(each or {}) for each in rows]


async def email_view_of(context: ServiceContext, email_id: str) -> dict[str, Any]:
    """``GET /emails/:id``'s body for the email."""
    email = await load_email(context, email_id)
    return email_view(email, [])


async def events(context: ServiceContext, email_id: str) -> list[str]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(EmailEvent.type)
            .where(EmailEvent.email_id == email_id)
            .order_by(EmailEvent.created_at, EmailEvent.id)
        )
        return list(rows)


@pytest.mark.parametrize("render_processes", [0, 1])
async def test_an_email_reaches_the_listener_signed_for_its_domain(
    fake_context: ServiceContext,
    shop: Domain,
    listener: Listener,
    dns: ThreadedDnsServer,
    render_processes: int,
) -> None:
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=2)
    worker = DeliveryWorker(fake_context, provider=provider, render_processes=render_processes)
    email = await add_email(
        fake_context, shop, to=["Ann <ann@corp.io>"], cc=["cy@corp.io"], bcc=["bo@hidden.io"],
        subject="Your order", html="<p>Thanks</p>", text="Thanks",
    )  # fmt: skip

    async with worker:
        assert await worker.deliver_due() == 1

    # One envelope a recipient, each with a return path tagged for that recipient alone;
    # the same signed bytes to all three.
    copies = {received.rcpt_tos[0]: received for received in listener.messages()}
    assert sorted(copies) == ["ann@corp.io", "bo@hidden.io", "cy@corp.io"]
    secret = await instance_secret(fake_context.database, fake_context.settings)
    for recipient, received in copies.items():
        assert received.rcpt_tos == [recipient]
        assert received.mail_from == return_path_address(
            secret, email.id, "send.shop.io", recipient
        )
        assert received.content == copies["ann@corp.io"].content
    received = copies["ann@corp.io"]
    assert len({each.mail_from for each in copies.values()}) == 3
    assert received.message_id == f"<{email.id}@shop.io>"
    assert received.header("Bcc") is None and b"bo@hidden.io" not in received.content
    assert received.header("Subject") == "Your order"
    assert received.content.startswith(b"DKIM-Signature:")
    dnsfunc = publish(dns, shop, fake_context.settings)
    assert dkimpy.verify(received.content, dnsfunc=dnsfunc) is True
    assert ("mailbridge._domainkey.shop.io", "TXT") in dns.zone.queries
    tampered = received.content.replace(b"Thanks", b"Thank you")
    assert dkimpy.verify(tampered, dnsfunc=dnsfunc) is False

    stored = await load_email(fake_context, email.id)
    assert stored.status == "delivered"
    assert stored.due_at is None and stored.lease_owner is None and stored.sent_at is not None
    assert stored.recipient_states == dict.fromkeys(copies, "delivered")
    assert await events(fake_context, email.id) == [
        "queued", "sent", "delivered", "delivered", "delivered",
    ]  # fmt: skip


async def suppressions(context: ServiceContext) -> list[tuple[str, str, str | None]]:
    async with context.database.session() as session:
        rows = await session.execute(
            select(Suppression.email, Suppression.reason, Suppression.source_email_id).order_by(
                Suppression.email
            )
        )
        return [(row.email, row.reason, row.source_email_id) for row in rows]


async def test_a_temporary_refusal_is_retried_after_the_backoff(
    fake_context: ServiceContext,
    clock: FakeClock,
    shop: Domain,
    worker: DeliveryWorker,
    listener: Listener,
) -> None:
    listener.handler.refuse_data("451 4.3.0 try again later")
    email = await add_email(fake_context, shop)

    assert await worker.deliver_due() == 1
    delayed = await load_email(fake_context, email.id)
    assert delayed.status == "delivery_delayed"
    assert delayed.due_at == clock.now() + timedelta(minutes=1)
    assert delayed.lease_owner is None
    assert delayed.last_error is not None and "451" in delayed.last_error
    assert listener.messages() == []

    clock.advance(timedelta(seconds=59))
    assert await worker.deliver_due() == 0  # not due yet
    clock.advance(timedelta(seconds=2))
    assert await worker.deliver_due() == 1

    [received] = listener.messages()
    assert received.message_id == email.message_id
    delivered = await load_email(fake_context, email.id)
    assert delivered.status == "delivered" and delivered.attempts == 2
    assert delivered.last_error is None
    assert await events(fake_context, email.id) == [
        "queued", "sent", "delivery_delayed", "sent", "delivered",
    ]  # fmt: skip


async def test_a_deferred_recipient_is_retried_alone(
    fake_context: ServiceContext,
    clock: FakeClock,
    shop: Domain,
    worker: DeliveryWorker,
    listener: Listener,
) -> None:
    """250 for one recipient, 450 for another: the accepted one has the email at once,
    the deferred one once after its retry, and neither a second copy."""
    listener.handler.refuse_rcpt("bo@corp.io", "450 4.2.1 mailbox busy")
    email = await add_email(fake_context, shop, to=["ann@corp.io", "bo@corp.io"])

    await worker.deliver_due()
    [first] = listener.messages()
    assert first.rcpt_tos == ["ann@corp.io"]  # delivered in its own transaction, now
    waiting = await load_email(fake_context, email.id)
    assert waiting.status == "delivery_delayed" and waiting.due_at is not None
    assert waiting.recipient_states == {"ann@corp.io": "delivered", "bo@corp.io": "retrying"}
    assert waiting.lease_owner is None and waiting.handed_over_by is None
    view = await email_view_of(fake_context, email.id)
    assert view["recipients"] == [
        {"email": "ann@corp.io", "status": "delivered"},
        {"email": "bo@corp.io", "status": "delivery_delayed"},
    ]

    clock.advance(timedelta(minutes=1))
    await worker.deliver_due()
    second = listener.messages()[1:]
    assert [message.rcpt_tos for message in second] == [["bo@corp.io"]]
    done = await load_email(fake_context, email.id)
    assert done.status == "delivered" and done.due_at is None and done.attempts == 2
    assert done.recipient_states == {"ann@corp.io": "delivered", "bo@corp.io": "delivered"}
    assert await events(fake_context, email.id) == [
        "queued", "sent", "delivered", "delivery_delayed", "sent", "delivered",
    ]  # fmt: skip
    data = await event_data(fake_context, email.id)
    assert [each.get("recipients") for each in data[2:]] == [
        ["ann@corp.io"], ["bo@corp.io"], None, ["bo@corp.io"],
    ]  # fmt: skip

    clock.advance(timedelta(hours=1))
    assert await worker.deliver_due() == 0
    assert len(listener.messages()) == 2


async def test_an_open_of_the_delivered_recipient_keeps_the_deferred_one_queued(
    fake_context: ServiceContext,
    clock: FakeClock,
    shop: Domain,
    worker: DeliveryWorker,
    listener: Listener,
) -> None:
    """One recipient's engagement (or a late bounce) while another waits for its retry
    does not take the email out of the queue."""
    listener.handler.refuse_rcpt("bo@corp.io", "450 4.2.1 mailbox busy")
    email = await add_email(fake_context, shop, to=["ann@corp.io", "bo@corp.io"])
    await worker.deliver_due()
    async with fake_context.database.session() as session:
        assert await record_open(session, fake_context.clock, email.id)
    assert (await load_email(fake_context, email.id)).status == "delivery_delayed"

    clock.advance(timedelta(minutes=1))
    await worker.deliver_due()
    assert sorted(m.rcpt_tos[0] for m in listener.messages()) == ["ann@corp.io", "bo@corp.io"]
    assert (await load_email(fake_context, email.id)).status == "delivered"


async def test_a_permanent_refusal_bounces_and_suppresses_the_recipient(
    fake_context: ServiceContext, shop: Domain, worker: DeliveryWorker, listener: Listener
) -> None:
    listener.handler.refuse_rcpt("gone@corp.io", "550 5.1.1 no such user")
    email = await add_email(fake_context, shop, to=["gone@corp.io"])

    await worker.deliver_due()

    bounced = await load_email(fake_context, email.id)
    assert bounced.status == "bounced" and bounced.due_at is None and bounced.lease_owner is None
    assert bounced.last_error is not None and "550 5.1.1" in bounced.last_error
    assert await events(fake_context, email.id) == ["queued", "bounced"]
    assert await suppressions(fake_context) == [("gone@corp.io", "bounced", email.id)]
    assert listener.messages() == []


async def test_one_refused_recipient_among_several(
    fake_context: ServiceContext, shop: Domain, worker: DeliveryWorker, listener: Listener
) -> None:
    listener.handler.refuse_rcpt("gone@corp.io", "550 5.1.1 no such user")
    email = await add_email(fake_context, shop, to=["ann@corp.io", "gone@corp.io"])

    await worker.deliver_due()

    [received] = listener.messages()
    assert received.rcpt_tos == ["ann@corp.io"]
    # Delivered to one, bounced for the other; a bounce is the status that sticks.
    assert await events(fake_context, email.id) == ["queued", "sent", "delivered", "bounced"]
    assert (await load_email(fake_context, email.id)).status == "bounced"
    assert await suppressions(fake_context) == [("gone@corp.io", "bounced", email.id)]


@pytest.mark.parametrize(
    ("reply", "status", "suppressed"),
    [
        ("550 5.1.1 user unknown", "bounced", True),
        ("554 5.7.1 message refused as spam", "failed", False),
    ],
)
async def test_a_refusal_at_the_end_of_data(
    fake_context: ServiceContext,
    shop: Domain,
    worker: DeliveryWorker,
    listener: Listener,
    reply: str,
    status: str,
    suppressed: bool,
) -> None:
    listener.handler.refuse_data(reply)
    email = await add_email(fake_context, shop, to=["ann@corp.io"])

    await worker.deliver_due()

    stored = await load_email(fake_context, email.id)
    assert stored.status == status and stored.due_at is None
    assert stored.last_error is not None and reply in stored.last_error
    assert await events(fake_context, email.id) == ["queued", "sent", status]
    expected = [("ann@corp.io", "bounced", email.id)] if suppressed else []
    assert await suppressions(fake_context) == expected


async def test_giving_up_after_the_last_retry(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain, listener: Listener
) -> None:
    listener.handler.refuse_data("451 busy", "451 busy")
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
    policy = RetryPolicy((timedelta(minutes=1),))
    email = await add_email(fake_context, shop)
    async with DeliveryWorker(fake_context, provider=provider, retry_policy=policy) as worker:
        await worker.deliver_due()
        clock.advance(timedelta(minutes=1))
        await worker.deliver_due()

    failed = await load_email(fake_context, email.id)
    assert failed.status == "failed" and failed.due_at is None
    assert failed.last_error == "gave up after 2 attempts: end of data deferred: 451 busy"
    assert await events(fake_context, email.id) == [
        "queued", "sent", "delivery_delayed", "sent", "failed",
    ]  # fmt: skip


async def test_an_unreachable_relay_delays_delivery(
    fake_context: ServiceContext, shop: Domain
) -> None:
    provider = SmtpProvider(SmtpRelay.from_url(f"smtp://127.0.0.1:{free_port()}"), pool_size=1)
    email = await add_email(fake_context, shop)
    async with DeliveryWorker(fake_context, provider=provider) as worker:
        await worker.deliver_due()

    delayed = await load_email(fake_context, email.id)
    assert delayed.status == "delivery_delayed"
    assert delayed.last_error is not None and "cannot reach the relay" in delayed.last_error
    assert await events(fake_context, email.id) == ["queued", "delivery_delayed"]


async def test_an_idle_connection_says_goodbye_and_so_do_all_on_close(
    fake_context: ServiceContext, shop: Domain, listener: Listener
) -> None:
    """Relays time a silent client out (Postfix: 300 s, "timeout after END-OF-MESSAGE");
    the pool QUITs a connection idle for its idle timeout, and every idle one on close."""
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=2, idle_timeout=0.3)
    async with DeliveryWorker(fake_context, provider=provider) as worker:
        await add_email(fake_context, shop)
        assert await worker.deliver_due() == 1
        assert listener.handler.quits == 0  # kept open for the next message
        deadline = asyncio.get_running_loop().time() + 30
        while listener.handler.quits == 0:
            assert asyncio.get_running_loop().time() < deadline, "no QUIT after the idle time"
            await asyncio.sleep(0.05)
        await add_email(fake_context, shop)
        assert await worker.deliver_due() == 1  # a new connection
    assert provider.connections_opened == 2
    kept = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=2, idle_timeout=3600)
    async with DeliveryWorker(fake_context, provider=kept) as worker:
        await add_email(fake_context, shop)
        assert await worker.deliver_due() == 1
    assert listener.handler.quits == 3  # the runner's stop said goodbye for it


async def test_connections_are_pooled_and_replaced_when_the_relay_drops_them(
    fake_context: ServiceContext, shop: Domain, pipelining: bool
) -> None:
    port = free_port()
    provider = SmtpProvider(SmtpRelay.from_url(f"smtp://127.0.0.1:{port}"), pool_size=2)
    async with DeliveryWorker(fake_context, provider=provider) as worker:
        with smtp_listener(port=port, pipelining=pipelining) as first:
            for _ in range(12):
                await add_email(fake_context, shop)
            assert await worker.deliver_due() == 12
            assert len(first.messages()) == 12
            assert provider.connections_opened <= 2
        # The old connections are gone.
        with smtp_listener(port=port, pipelining=pipelining) as second:
            email = await add_email(fake_context, shop)
            assert await worker.deliver_due() == 1
            assert [m.message_id for m in second.messages()] == [email.message_id]
    assert (await load_email(fake_context, email.id)).status == "delivered"


async def test_starttls_and_login(
    fake_context: ServiceContext, shop: Domain, pipelining: bool
) -> None:
    with smtp_listener(
        tls_context=server_tls_context(), login=("relay", "s3cret"), pipelining=pipelining
    ) as secure:
        url = f"smtp://relay:s3cret@127.0.0.1:{secure.port}?starttls=true&verify=false"
        provider = SmtpProvider(SmtpRelay.from_url(url), pool_size=1)
        email = await add_email(fake_context, shop)
        async with DeliveryWorker(fake_context, provider=provider) as worker:
            await worker.deliver_due()
        assert [m.message_id for m in secure.messages()] == [email.message_id]
        assert secure.authenticator is not None and secure.authenticator.logins == [b"relay"]
        assert secure.messages()[0].tls


async def test_a_wrong_password_is_a_temporary_failure(
    fake_context: ServiceContext, shop: Domain
) -> None:
    with smtp_listener(tls_context=server_tls_context(), login=("relay", "s3cret")) as secure:
        url = f"smtp://relay:wrong@127.0.0.1:{secure.port}?starttls=true&verify=false"
        provider = SmtpProvider(SmtpRelay.from_url(url), pool_size=1)
        email = await add_email(fake_context, shop)
        async with DeliveryWorker(fake_context, provider=provider) as worker:
            await worker.deliver_due()
        assert secure.messages() == []
    delayed = await load_email(fake_context, email.id)
    assert delayed.status == "delivery_delayed"
    assert delayed.last_error is not None and "535" in delayed.last_error


async def leave_unsettled(context: ServiceContext, email_id: str, owner: str) -> None:
    """What a runner killed after its handover commit leaves in the database."""
    now = context.clock.now()
    async with context.database.session() as session:
        row = await session.get(Email, email_id)
        assert row is not None
        row.status, row.last_event, row.sent_at, row.lease_owner = "sent", "sent", now, owner
        row.handed_over_by = owner
        row.due_at = row.lease_until = now + timedelta(seconds=120)
        row.attempts = 2
        await session.commit()


@pytest.mark.parametrize(
    ("book", "filed_attempt", "received"),
    [
        (True, 2, 0),  # the terminator went out: not sent again
        (True, None, 1),  # it did not: the relay discarded the message, send it again
        (True, 1, 1),  # a receipt of an earlier attempt says nothing about this one
        (False, None, 0),  # nothing to go by: taken as sent
    ],
)
async def test_unsettled_handovers_go_by_their_receipts(
    fake_context: ServiceContext,
    clock: FakeClock,
    shop: Domain,
    listener: Listener,
    tmp_path: Path,
    book: bool,
    filed_attempt: int | None,
    received: int,
) -> None:
    email = await add_email(fake_context, shop)
    await leave_unsettled(fake_context, email.id, "dead-runner")
    directory = tmp_path / "handovers"
    if book:
        receipts = ReceiptBook(directory, "dead-runner")
        receipts.file("some-other-email", 2)
        if filed_attempt is not None:
            receipts.file(email.id, filed_attempt)
        receipts.close()
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)
    async with DeliveryWorker(fake_context, provider=provider, owner="settler") as worker:
        assert await worker.deliver_due() == 0  # still leased to the dead runner
        clock.advance(timedelta(seconds=121))
        await worker.deliver_due()

    assert len(listener.messages()) == received
    settled = await load_email(fake_context, email.id)
    assert settled.status == "delivered" and settled.lease_owner is None and settled.due_at is None
    delivered_events = await events(fake_context, email.id)
    assert delivered_events[-1] == "delivered"


@pytest.mark.parametrize(("filed", "received"), [(True, 0), (False, 1)])
async def test_a_settler_killed_after_its_claim_leaves_the_handover_to_its_maker(
    fake_context: ServiceContext,
    clock: FakeClock,
    shop: Domain,
    listener: Listener,
    tmp_path: Path,
    filed: bool,
    received: int,
) -> None:
    """Runner A hands over and dies; runner B leases the email to settle it and dies
    too; runner C must still go by A's receipts (B's book says nothing about it), and
    A's book is kept while that handover is unsettled."""
    email = await add_email(fake_context, shop)
    await leave_unsettled(fake_context, email.id, "maker")
    directory = tmp_path / "handovers"
    maker = ReceiptBook(directory, "maker")
    if filed:
        maker.file(email.id, 2)
    maker.close()
    ReceiptBook(directory, "killed-settler").close()
    clock.advance(timedelta(seconds=121))
    async with fake_context.database.session() as session:
        batch = await delivery.claim_unsettled_emails(
            session, clock.now(), "killed-settler", timedelta(seconds=60), 10
        )
        await session.commit()
    assert batch.handed_over_by == {email.id: "maker"}
    clock.advance(timedelta(seconds=61))

    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)
    async with DeliveryWorker(fake_context, provider=provider, owner="settler") as worker:
        assert (directory / "maker.receipts").exists()
        await worker.deliver_due()

    assert len(listener.messages()) == received
    settled = await load_email(fake_context, email.id)
    assert settled.status == "delivered" and settled.handed_over_by is None


@pytest.mark.parametrize(("filed", "copies_to_ann"), [(True, 0), (False, 1)])
async def test_a_runner_killed_between_recipients_is_settled_then_continued(
    fake_context: ServiceContext,
    clock: FakeClock,
    shop: Domain,
    listener: Listener,
    tmp_path: Path,
    filed: bool,
    copies_to_ann: int,
) -> None:
    """A dead runner had handed the email over to its first recipient (an envelope of
    its own) and not yet to the second: the first goes by its receipt, the second gets
    its one copy, and nobody a second."""
    email = await add_email(fake_context, shop, to=["ann@corp.io", "bo@corp.io"])
    await leave_unsettled(fake_context, email.id, "dead-runner")
    async with fake_context.database.session() as session:
        row = await session.get(Email, email.id)
        assert row is not None
        row.recipient_states = {"ann@corp.io": "sent", "bo@corp.io": "queued"}
        await session.commit()
    directory = tmp_path / "handovers"
    book = ReceiptBook(directory, "dead-runner")
    book.file(email.id, 2, 1)  # bo's envelope (#1) of the same attempt says nothing of ann's
    if filed:
        book.file(email.id, 2)
    book.close()
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)
    clock.advance(timedelta(seconds=121))
    async with DeliveryWorker(fake_context, provider=provider, owner="settler") as worker:
        await worker.deliver_due()

    sent_to = [message.rcpt_tos for message in listener.messages()]
    assert sorted(sent_to) == sorted([["ann@corp.io"]] * copies_to_ann + [["bo@corp.io"]])
    done = await load_email(fake_context, email.id)
    assert done.recipient_states == {"ann@corp.io": "delivered", "bo@corp.io": "delivered"}
    assert done.status == "delivered" and done.due_at is None and done.handed_over_by is None


async def test_a_receipt_is_filed_for_each_handover(
    fake_context: ServiceContext, shop: Domain, listener: Listener, tmp_path: Path
) -> None:
    directory = tmp_path / "handovers"
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)
    first = await add_email(fake_context, shop)
    second = await add_email(fake_context, shop)
    listener.handler.refuse_rcpt("ann@corp.io", "550 no such user")  # no handover for one
    async with DeliveryWorker(fake_context, provider=provider, owner="me") as worker:
        await worker.deliver_due()

    handed_over = [receipt_filed(directory, "me", email.id, 1) for email in (first, second)]
    assert handed_over.count(True) == 1 and handed_over.count(False) == 1
    assert receipt_filed(directory, "someone-else", first.id, 1) is None


async def test_receipt_books_of_finished_runners_are_removed(
    fake_context: ServiceContext, shop: Domain, listener: Listener, tmp_path: Path
) -> None:
    directory = tmp_path / "handovers"
    email = await add_email(fake_context, shop)
    await leave_unsettled(fake_context, email.id, "still-owed")
    for runner in ("still-owed", "long-gone"):
        ReceiptBook(directory, runner).close()
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)
    async with DeliveryWorker(fake_context, provider=provider, owner="me"):
        assert sorted(path.name for path in directory.iterdir()) == ["still-owed.receipts"]
