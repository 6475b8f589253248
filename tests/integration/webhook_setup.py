"""Fixtures of the webhook tests: the API and the runner's dispatcher and webhook worker on
one fake clock, and a real HTTP receiver on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from mailbridge.api.app import create_app
from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks._activity_dispatch import default_consumers
from mailbridge.storage.database import Database
from tests.integration.conftest import USER_AGENT, Tenant, Tenants
from tests.webhook_receiver import Receiver, webhook_receiver

START = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


@dataclass
class Hooks:
    client: httpx.AsyncClient
    clock: FakeClock
    context: ServiceContext
    tenant: Tenant
    tenants: Tenants
    receiver: Receiver
    dispatcher: ActivityDispatcher
    worker: WebhookWorker

    async def create(
        self,
        events: Sequence[str] = ("contact.created",),
        endpoint: str | None = None,
        tenant: Tenant | None = None,
    ) -> dict[str, Any]:
        response = await self.client.post(
            "/webhooks",
            json={"endpoint": endpoint or self.receiver.url(), "events": list(events)},
            headers=(tenant or self.tenant).headers,
        )
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def add_contact(self, email: str, tenant: Tenant | None = None) -> str:
        response = await self.client.post(
            "/contacts", json={"email": email}, headers=(tenant or self.tenant).headers
        )
        assert response.status_code in (200, 201), response.text
        return str(response.json()["id"])

    async def run(self) -> int:
        """Hand out what was recorded and attempt what is due now; the attempts made."""
        await self.dispatcher.dispatch_all()
        return await self.worker.deliver_due()

    async def deliveries(self, webhook_id: str, tenant: Tenant | None = None) -> list[Any]:
        response = await self.client.get(
            f"/webhooks/{webhook_id}/deliveries", headers=(tenant or self.tenant).headers
        )
        assert response.status_code == 200, response.text
        data: list[Any] = response.json()["data"]
        return data


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as running:
        yield running


@pytest.fixture
def hook_settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """Loopback endpoints allowed; an endpoint gets 10 s (a busy machine's loopback POST
    can take over 1 s), or what a test's ``webhook_timeout(seconds)`` mark says."""
    mark = request.node.get_closest_marker("webhook_timeout")
    timeout = float(mark.args[0]) if mark else 10.0
    return settings.model_copy(update={"webhook_allow_private": True, "webhook_timeout": timeout})


@pytest.fixture
async def hooks(
    hook_settings: Settings, database: Database, receiver: Receiver
) -> AsyncIterator[Hooks]:
    clock = FakeClock(START)
    context = ServiceContext(settings=hook_settings, database=database, clock=clock)
    app: FastAPI = create_app(context=context)
    tenants = Tenants(context)
    tenant = await tenants.create()
    worker = WebhookWorker(context, owner="test-runner")
    dispatcher = ActivityDispatcher(
        context, default_consumers(context, on_webhook_deliveries=worker.deliveries_added)
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://mailbridge.test",
            headers={"User-Agent": USER_AGENT},
        ) as client:
            try:
                yield Hooks(client, clock, context, tenant, tenants, receiver, dispatcher, worker)
            finally:
                await worker.close()
