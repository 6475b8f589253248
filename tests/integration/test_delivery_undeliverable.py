"""An email that cannot be composed fails at once, with a reason and email.failed; it
never waits in ``queued`` for a lease to run out, again and again."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import ActivityEvent
from tests.integration.conftest import Tenants
from tests.integration.email_factory import add_domain, add_email, load_email


@pytest.fixture
def fake_context(settings: Settings, database: Database) -> ServiceContext:
    return ServiceContext(settings=settings, database=database, clock=FakeClock())


async def test_a_message_that_cannot_be_composed_fails_with_email_failed(
    fake_context: ServiceContext,
) -> None:
    tenant = await Tenants(fake_context).create()
    shop = await add_domain(fake_context, tenant.team_id)
    # Stored before acceptance checked subjects (or by a path that forgot to).
    broken = await add_email(fake_context, shop, subject="Hi\r\nBcc: all@corp.io")
    fine = await add_email(fake_context, shop)
    async with DeliveryWorker(fake_context) as worker:
        await worker.deliver_due()
        assert await worker.deliver_due() == 0  # nothing left to try

    failed = await load_email(fake_context, broken.id)
    assert failed.status == "failed"
    assert failed.last_error is not None and "could not be composed" in failed.last_error
    assert (await load_email(fake_context, fine.id)).status == "delivered"
    async with fake_context.database.session() as session:
        events = await session.scalars(
            select(ActivityEvent).where(ActivityEvent.team_id == tenant.team_id)
        )
        found = {(event.type, event.data.get("email_id")) for event in events}
    assert ("email.failed", broken.id) in found, found
