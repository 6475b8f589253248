"""Claiming due emails: leases, concurrent runners, fencing, graceful stop."""

from __future__ import annotations

import asyncio
import collections
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.mail.providers import Accepted, Outcome, SmtpProvider, SmtpRelay
from mailbridge.runner import Runner
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.delivery import _queue as delivery_queue
from mailbridge.services.delivery._journal import DeliveryJournal
from mailbridge.services.delivery._queue import EMAIL_RETRY_POLICY
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Domain, Email, EmailAttachment, EmailEvent
from tests.integration.conftest import Tenants
from tests.integration.email_factory import Attachment, add_domain, add_email, load_email
from tests.smtp_listener import smtp_listener

LEASE = timedelta(seconds=120)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_context(settings: Settings, database: Database, clock: FakeClock) -> ServiceContext:
    return ServiceContext(settings=settings, database=database, clock=clock)


@pytest.fixture
async def shop(fake_context: ServiceContext) -> Domain:
    tenant = await Tenants(fake_context).create()
    return await add_domain(fake_context, tenant.team_id)


async def claim(context: ServiceContext, owner: str, limit: int) -> list[str]:
    """As the runner claims: inline on SQLite, through a session on PostgreSQL."""
    batch = await delivery_queue.claim_emails(
        context.database, context.clock.now(), owner, LEASE, limit
    )
    return [email.id for email in batch.emails]


async def test_a_claimed_email_reads_as_the_orm_loads_it(
    fake_context: ServiceContext, shop: Domain
) -> None:
    """Every column of a claimed email — JSON lists and objects, instants, flags — has
    the value a session loads, and its related rows come along."""
    added = await add_email(
        fake_context, shop, to=["Ann <ann@corp.io>", "bob@corp.io"], cc=["cc@corp.io"],
        reply_to=["help@shop.io"], headers={"X-Campaign": "spring"}, marketing=True,
        attachments=[Attachment("a.txt", b"hello")], subject="Grüße",
    )  # fmt: skip
    busy = await add_email(fake_context, shop)
    batch = await delivery_queue.claim_emails(
        fake_context.database, fake_context.clock.now(), "me", LEASE, 10, busy=[busy.id]
    )
    [claimed] = batch.emails
    loaded = await load_email(fake_context, added.id)
    for column in Email.__table__.columns:
        assert getattr(claimed, column.key) == getattr(loaded, column.key), column.key
    assert claimed.lease_owner == "me" and claimed.attempts == 1
    assert claimed.created_at.tzinfo is not None and isinstance(claimed.marketing, bool)
    async with fake_context.database.session() as session:
        domain = await session.get(Domain, shop.id)
        stored = (
            await session.scalars(
                select(EmailAttachment).where(EmailAttachment.email_id == added.id)
            )
        ).all()
    for column in Domain.__table__.columns:
        assert getattr(batch.domains[shop.id], column.key) == getattr(domain, column.key)
    [attachment] = batch.attachments[added.id]
    assert attachment.filename == "a.txt"
    for column in EmailAttachment.__table__.columns:
        if column.key != "content":
            assert getattr(attachment, column.key) == getattr(stored[0], column.key)
    assert "content" not in attachment.__dict__  # the bytes are read when it is delivered
    claimed.status = "sent"  # a detached object: changes stay on it
    assert (await load_email(fake_context, added.id)).status == "queued"


async def test_claims_take_due_emails_oldest_first_and_lease_them(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    first = await add_email(fake_context, shop)
    clock.advance(1)
    second = await add_email(fake_context, shop)
    clock.advance(1)
    later = await add_email(fake_context, shop)
    async with fake_context.database.session() as session:
        await session.execute(
            update(Email)
            .where(Email.id == later.id)
            .values(due_at=clock.now() + timedelta(hours=1))
        )
        await session.commit()
    canceled = await add_email(fake_context, shop)
    async with fake_context.database.session() as session:
        row = await session.get(Email, canceled.id)
        assert row is not None
        row.status, row.due_at = "canceled", None
        await session.commit()

    assert await claim(fake_context, "a", 1) == [first.id]
    assert await claim(fake_context, "b", 10) == [second.id]  # first is leased to a
    assert await claim(fake_context, "c", 10) == []
    leased = await load_email(fake_context, first.id)
    assert leased.lease_owner == "a" and leased.lease_until == clock.now() + LEASE
    assert leased.attempts == 1

    async with fake_context.database.session() as session:
        next_due = await delivery_queue.next_email_due_at(session, clock.now())
        assert next_due == (await load_email(fake_context, later.id)).due_at
    clock.advance(LEASE + timedelta(seconds=1))  # a and b died
    assert sorted(await claim(fake_context, "d", 10)) == sorted([first.id, second.id])
    assert (await load_email(fake_context, first.id)).attempts == 2


async def test_concurrent_claims_never_share_an_email(
    fake_context: ServiceContext, shop: Domain
) -> None:
    emails = [await add_email(fake_context, shop) for _ in range(60)]
    results = await asyncio.gather(*(claim(fake_context, f"w{i}", 7) for i in range(6)))
    claimed = [email_id for ids in results for email_id in ids]
    assert len(claimed) == len(set(claimed)) == 42
    assert set(claimed) <= {email.id for email in emails}


async def test_two_workers_deliver_every_email_exactly_once(
    fake_context: ServiceContext, shop: Domain
) -> None:
    emails = [await add_email(fake_context, shop) for _ in range(120)]
    settings = fake_context.settings.model_copy(
        update={"delivery_concurrency": 8, "delivery_batch_size": 5}
    )
    context = ServiceContext(settings, fake_context.database, fake_context.clock)
    with smtp_listener() as listener:
        workers = [
            DeliveryWorker(
                context, provider=SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=4)
            )
            for _ in range(2)
        ]
        stopping = asyncio.Event()
        running = [asyncio.create_task(worker.run(stopping)) for worker in workers]
        # Until every email arrived (or a generous limit passed: the counts below say what
        # is missing), then a moment for any duplicate to show up.
        loop = asyncio.get_running_loop()
        limit = loop.time() + 30
        while len(listener.messages()) < len(emails) and loop.time() < limit:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        stopping.set()
        await asyncio.gather(*running)
        counts = collections.Counter(message.message_id for message in listener.messages())

    assert counts == {email.message_id: 1 for email in emails}
    async with context.database.session() as session:
        statuses = await session.execute(select(Email.status, func.count()).group_by(Email.status))
        assert dict(statuses.tuples().all()) == {"delivered": len(emails)}
        sent = await session.scalar(
            select(func.count()).select_from(EmailEvent).where(EmailEvent.type == "sent")
        )
        assert sent == len(emails)
        owners = await session.execute(select(EmailEvent.email_id).where(EmailEvent.type == "sent"))
        assert len(set(owners.scalars())) == len(emails)


class RecordingHandover:
    def __init__(self) -> None:
        self.completed = 0
        self.abandoned = 0

    def complete(self) -> None:
        self.completed += 1

    def abandon(self) -> None:
        self.abandoned += 1

    async def outcome(self) -> Outcome:
        return Accepted()


async def test_a_runner_that_lost_its_lease_cannot_hand_over(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    async with fake_context.database.session() as session:
        [slow_copy] = (
            await delivery_queue.claim_due(session, clock.now(), "slow", LEASE, 1)
        ).emails
        await session.commit()
    clock.advance(LEASE + timedelta(seconds=1))
    assert await claim(fake_context, "fast", 1) == [email.id]  # the lease ran out

    journal = DeliveryJournal(
        fake_context.database, clock, "slow", lease=LEASE, retry_policy=EMAIL_RETRY_POLICY
    )
    handover = RecordingHandover()
    assert await journal.hand_over(slow_copy, handover) is False
    assert handover.completed == 0
    stored = await load_email(fake_context, email.id)
    assert stored.status == "queued" and stored.lease_owner == "fast"

    fast = DeliveryJournal(
        fake_context.database, clock, "fast", lease=LEASE, retry_policy=EMAIL_RETRY_POLICY
    )
    fast_handover = RecordingHandover()
    fast_copy = await load_email(fake_context, email.id)
    assert await fast.hand_over(fast_copy, fast_handover) is True
    assert fast_handover.completed == 1
    assert (await load_email(fake_context, email.id)).status == "sent"


async def test_stopping_releases_claimed_emails_and_finishes_those_in_flight(
    fake_context: ServiceContext, shop: Domain
) -> None:
    in_flight = await add_email(fake_context, shop)
    with smtp_listener() as listener:
        listener.handler.data_delay = 0.5
        worker = DeliveryWorker(
            fake_context, provider=SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
        )
        runner = Runner(fake_context, workers=[worker], ticks=[])
        await runner.start_in_background()
        runner.notify()
        async with asyncio.timeout(30):
            while not listener.handler.transactions_started:
                await asyncio.sleep(0.01)
        assert listener.handler.transactions_started == 1
        # Claimed by this worker but not started when it is told to stop.
        waiting = await add_email(fake_context, shop)
        assert await claim(fake_context, worker.owner, 1) == [waiting.id]
        await runner.stop()
        assert [m.message_id for m in listener.messages()] == [in_flight.message_id]

    assert (await load_email(fake_context, in_flight.id)).status == "delivered"
    released = await load_email(fake_context, waiting.id)
    assert released.status == "queued" and released.lease_owner is None
    assert released.attempts == 0


async def test_an_email_canceled_while_claimed_is_not_handed_over(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    async with fake_context.database.session() as session:
        [claimed] = (await delivery_queue.claim_due(session, clock.now(), "me", LEASE, 1)).emails
        await session.commit()
    async with fake_context.database.session() as session:  # the API cancels it meanwhile
        row = await session.get(Email, email.id)
        assert row is not None
        row.status, row.last_event, row.due_at = "canceled", "canceled", None
        await session.commit()

    journal = DeliveryJournal(
        fake_context.database, clock, "me", lease=LEASE, retry_policy=EMAIL_RETRY_POLICY
    )
    handover = RecordingHandover()
    assert await journal.hand_over(claimed, handover) is False
    assert handover.completed == 0
    assert (await load_email(fake_context, email.id)).status == "canceled"


async def test_two_attempts_of_one_email_in_one_group_hand_over_once(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    email = await add_email(fake_context, shop)
    copies = []
    for _ in range(2):  # the second claim: its own lease ran out while the first was slow
        async with fake_context.database.session() as session:
            copies += (await delivery_queue.claim_due(session, clock.now(), "me", LEASE, 1)).emails
            await session.commit()
        clock.advance(LEASE + timedelta(seconds=1))
    assert [copy.id for copy in copies] == [email.id, email.id]

    journal = DeliveryJournal(
        fake_context.database, clock, "me", lease=LEASE, retry_policy=EMAIL_RETRY_POLICY
    )
    handovers = [RecordingHandover(), RecordingHandover()]
    decisions = [journal.submit_handover(c, h) for c, h in zip(copies, handovers, strict=True)]
    assert sorted(await asyncio.gather(*decisions)) == [False, True]  # one commit, one group
    assert sorted(handover.completed for handover in handovers) == [0, 1]
    await journal.stop()
    assert journal.commits == 1


async def test_a_runner_never_reclaims_an_email_it_is_still_delivering(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    emails = {(await add_email(fake_context, shop)).id for _ in range(2)}
    [slow] = await claim(fake_context, "me", 1)
    clock.advance(LEASE + timedelta(seconds=1))  # the slow attempt outlives its lease
    async with fake_context.database.session() as session:
        batch = await delivery_queue.claim_due(session, clock.now(), "me", LEASE, 10, busy={slow})
        await session.commit()
    assert [email.id for email in batch.emails] == sorted(emails - {slow})


async def test_news_arriving_within_the_linger_shares_one_commit(
    fake_context: ServiceContext, clock: FakeClock, shop: Domain
) -> None:
    """A group waits ``linger`` after its first news: deliveries finishing a moment
    apart are written by one commit (each commit rewrites the tail pages of every table
    it touches), and each still learns its own decision."""
    for _ in range(4):
        await add_email(fake_context, shop)
    claimed = (
        await delivery_queue.claim_emails(fake_context.database, clock.now(), "me", LEASE, 4)
    ).emails
    journal = DeliveryJournal(
        fake_context.database, clock, "me", lease=LEASE, retry_policy=EMAIL_RETRY_POLICY,
        linger=0.2,
    )  # fmt: skip
    journal.start()
    handovers = [RecordingHandover() for _ in claimed]
    decisions = []
    for email, handover in zip(claimed, handovers, strict=True):
        decisions.append(journal.submit_handover(email, handover))
        await asyncio.sleep(0.001)  # each a moment after the one before
    assert await asyncio.gather(*decisions) == [True] * 4
    assert [handover.completed for handover in handovers] == [1] * 4
    await journal.stop()
    assert journal.commits == 1  # committing at the first news would make several
    for email in claimed:
        assert (await load_email(fake_context, email.id)).status == "sent"
