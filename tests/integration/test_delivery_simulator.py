"""The mailbox simulator: addresses on the test domain synthesize their outcome."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select

from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Domain, EmailEvent, Suppression
from tests.integration.conftest import Tenants
from tests.integration.email_factory import add_domain, add_email, load_email
from tests.smtp_listener import Listener, smtp_listener

SIM = "simulator.mailbridge.dev"


@pytest.fixture
def listener() -> Iterator[Listener]:
    with smtp_listener() as running:
        yield running


@pytest.fixture
async def shop(context: ServiceContext) -> Domain:
    tenant = await Tenants(context).create()
    return await add_domain(context, tenant.team_id)


async def event_log(context: ServiceContext, email_id: str) -> list[tuple[str, list[str]]]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(EmailEvent)
            .where(EmailEvent.email_id == email_id)
            .order_by(EmailEvent.created_at, EmailEvent.id)
        )
        return [(event.type, list(event.data.get("recipients", []))) for event in rows]


async def suppressed(context: ServiceContext) -> dict[str, str]:
    async with context.database.session() as session:
        rows = await session.execute(select(Suppression.email, Suppression.reason))
        return {row.email: row.reason for row in rows}


@pytest.mark.parametrize(
    ("address", "status", "events", "suppression"),
    [
        (f"delivered@{SIM}", "delivered", ["sent", "delivered"], None),
        (f"delivered+signup@{SIM}", "delivered", ["sent", "delivered"], None),
        (f"bounced@{SIM}", "bounced", ["sent", "bounced"], "bounced"),
        (f"Bounced+x@{SIM}", "bounced", ["sent", "bounced"], "bounced"),
        (f"complained@{SIM}", "complained", ["sent", "delivered", "complained"], "complained"),
    ],
)
async def test_simulated_addresses_never_reach_a_provider(
    context: ServiceContext,
    shop: Domain,
    listener: Listener,
    address: str,
    status: str,
    events: list[str],
    suppression: str | None,
) -> None:
    email = await add_email(context, shop, to=[address])
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
    async with DeliveryWorker(context, provider=provider) as worker:
        assert await worker.deliver_due() == 1

    assert listener.messages() == []
    assert provider.connections_opened == 0
    stored = await load_email(context, email.id)
    assert stored.status == status and stored.due_at is None and stored.sent_at is not None
    log = await event_log(context, email.id)
    assert [event for event, _ in log] == ["queued", *events]
    assert all(recipients == [address.lower()] for _, recipients in log[2:])
    expected = {address.lower(): suppression} if suppression else {}
    assert await suppressed(context) == expected


async def test_simulated_recipients_leave_the_envelope_of_a_mixed_email(
    context: ServiceContext, shop: Domain, listener: Listener
) -> None:
    email = await add_email(
        context, shop, to=["ann@corp.io", f"bounced@{SIM}"], cc=[f"delivered@{SIM}"]
    )
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
    async with DeliveryWorker(context, provider=provider) as worker:
        await worker.deliver_due()

    [received] = listener.messages()
    assert received.rcpt_tos == ["ann@corp.io"]
    # The header still names everyone, as the sender wrote it.
    assert f"bounced@{SIM}" in (received.header("To") or "")
    assert await event_log(context, email.id) == [
        ("queued", []),
        ("sent", []),
        ("delivered", ["ann@corp.io"]),
        ("bounced", [f"bounced@{SIM}"]),
        ("delivered", [f"delivered@{SIM}"]),
    ]
    stored = await load_email(context, email.id)
    assert stored.status == "bounced"
    assert stored.recipient_states == {
        "ann@corp.io": "delivered", f"bounced@{SIM}": "bounced", f"delivered@{SIM}": "delivered",
    }  # fmt: skip
    assert await suppressed(context) == {f"bounced@{SIM}": "bounced"}
