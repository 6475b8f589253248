"""An email's webhooks arrive in the order its events happened: a later event waits
until the earlier ones are delivered or given up; other emails' events do not wait."""

from __future__ import annotations

import collections
import random
from datetime import timedelta

from mailbridge.services.kernel import record_event
from mailbridge.storage.types import new_id
from tests.integration.test_webhook_delivery import RETRY_DELAYS
from tests.integration.webhook_setup import Hooks

EVENTS = ["email.sent", "email.delivered", "email.opened", "email.clicked", "email.bounced"]


async def happened(hooks: Hooks, *events: tuple[str, str]) -> None:
    """(event type, email id) pairs, recorded in this order, in one transaction."""
    async with hooks.context.database.session() as session:
        for event_type, email_id in events:
            data = {"email_id": email_id, "to": ["ann@corp.io"]}
            record_event(session, hooks.clock, hooks.tenant.team_id, event_type, data)
        await session.commit()


def arrived(hooks: Hooks) -> list[tuple[str, str, int]]:
    """(event type, email id, the status the receiver answered) in arrival order."""
    return [
        (request.payload["type"], request.payload["data"]["email_id"], request.status)
        for request in hooks.receiver.requests()
    ]


async def test_a_later_event_waits_for_the_earlier_one_and_other_emails_do_not(
    hooks: Hooks,
) -> None:
    await hooks.create(EVENTS)
    hooks.receiver.answer_type("email.delivered", 500)
    first, other = new_id(), new_id()
    await happened(
        hooks,
        ("email.sent", first),
        ("email.delivered", first),
        ("email.bounced", first),
        ("email.opened", other),
    )

    assert await hooks.run() == 3
    got = arrived(hooks)
    assert sorted(got[:2]) == sorted([("email.sent", first, 200), ("email.opened", other, 200)])
    assert got[2:] == [("email.delivered", first, 500)]  # the bounce waits behind it

    hooks.clock.advance(timedelta(seconds=4))
    assert await hooks.run() == 0  # still waiting for the retry of the delivery
    hooks.clock.advance(timedelta(seconds=1))
    assert await hooks.run() == 2
    assert arrived(hooks)[3:] == [
        ("email.delivered", first, 200),
        ("email.bounced", first, 200),
    ]


async def test_a_delivery_given_up_lets_the_next_go(hooks: Hooks) -> None:
    await hooks.create(EVENTS)
    hooks.receiver.answer_type("email.delivered", *[500] * 8)
    email_id = new_id()
    await happened(hooks, ("email.delivered", email_id), ("email.bounced", email_id))

    assert await hooks.run() == 1
    for delay in RETRY_DELAYS:
        assert [each[0] for each in arrived(hooks)][-1] == "email.delivered"
        hooks.clock.advance(delay)
        await hooks.run()
    types = [each[0] for each in arrived(hooks)]
    assert types == ["email.delivered"] * 8 + ["email.bounced"]


async def test_many_emails_each_in_order_under_load(hooks: Hooks) -> None:
    """200 emails, four events each, recorded interleaved; the receiver answers slowly
    enough that many deliveries are in flight at once: each email's arrive in order."""
    await hooks.create(EVENTS)
    hooks.receiver.delay = 0.002
    emails = [new_id() for _ in range(200)]
    order = EVENTS[:4]
    recorded = [(event_type, email_id) for event_type in order for email_id in emails]
    rng = random.Random(7)
    # Interleave the emails, keeping each one's own order (as concurrent sends do).
    pending = {email_id: list(order) for email_id in emails}
    mixed = []
    while pending:
        email_id = rng.choice(list(pending))
        mixed.append((pending[email_id].pop(0), email_id))
        if not pending[email_id]:
            del pending[email_id]
    assert sorted(mixed) == sorted(recorded)
    await happened(hooks, *mixed)

    assert await hooks.run() == 800
    seen: dict[str, list[str]] = collections.defaultdict(list)
    for event_type, email_id, status in arrived(hooks):
        assert status == 200
        seen[email_id].append(event_type)
    assert seen == {email_id: order for email_id in emails}
