"""Fixtures of the campaign tests: a pro team with shop.io verified and an audience, on a fake
clock; the campaign and delivery workers driven by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from mailbridge.api.app import create_app
from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.runner.campaigns import CampaignWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import ActivityEvent, Campaign, Email
from tests.integration.conftest import USER_AGENT, Tenant, Tenants
from tests.integration.sending import add_domain

START = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
SENDER = "Shop <news@shop.io>"


@dataclass
class Campaigns:
    client: httpx.AsyncClient
    clock: FakeClock
    context: ServiceContext
    tenant: Tenant
    tenants: Tenants
    audience_id: str
    worker: CampaignWorker

    @property
    def headers(self) -> dict[str, str]:
        return self.tenant.headers

    async def contacts(self, *addresses: str, **fields: Any) -> list[str]:
        answer = await self.client.post(
            "/contacts/batch",
            json={"audience_id": self.audience_id,
                  "contacts": [{"email": address, **fields} for address in addresses]},
            headers=self.headers,
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        return [item["id"] for item in answer.json()["data"]]

    async def create(self, **fields: Any) -> str:
        body: dict[str, Any] = {
            "name": "November news", "from": SENDER, "subject": "Hello {{{FIRST_NAME|there}}}",
            "html": "<p>Hi {{{FIRST_NAME|there}}}</p>", "audience_id": self.audience_id,
        }  # fmt: skip
        body.update(fields)
        answer = await self.client.post("/campaigns", json=body, headers=self.headers)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    async def send(self, campaign_id: str, **body: Any) -> httpx.Response:
        return await self.client.post(
            f"/campaigns/{campaign_id}/send", json=body, headers=self.headers
        )

    async def get(self, campaign_id: str) -> dict[str, Any]:
        answer = await self.client.get(f"/campaigns/{campaign_id}", headers=self.headers)
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    async def run(self) -> int:
        """Step every campaign due now."""
        return await self.worker.run_all()

    async def later(self, delta: timedelta) -> int:
        self.clock.advance(delta)
        return await self.run()

    async def emails(self, campaign_id: str) -> list[Email]:
        async with self.context.database.session() as session:
            rows = await session.scalars(
                select(Email).where(Email.campaign_id == campaign_id).order_by(Email.id)
            )
            return list(rows.all())

    async def campaign(self, campaign_id: str) -> Campaign:
        async with self.context.database.session() as session:
            found = await session.get(Campaign, campaign_id)
            assert found is not None
            return found

    async def activity(self, type_: str) -> list[ActivityEvent]:
        async with self.context.database.session() as session:
            rows = await session.scalars(
                select(ActivityEvent)
                .where(ActivityEvent.team_id == self.tenant.team_id, ActivityEvent.type == type_)
                .order_by(ActivityEvent.id)
            )
            return list(rows.all())


@pytest.fixture
async def shop_campaigns(settings: Settings, database: Database) -> AsyncIterator[Campaigns]:
    clock = FakeClock(START)
    context = ServiceContext(settings=settings, database=database, clock=clock)
    app: FastAPI = create_app(context=context)
    tenants = Tenants(context)
    tenant = await tenants.create(plan="pro")
    await add_domain(context, tenant.team_id)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://mailbridge.test",
            headers={"User-Agent": USER_AGENT},
        ) as client:  # fmt: skip
            answer = await client.post(
                "/audiences", json={"name": "Customers"}, headers=tenant.headers
            )
            assert answer.status_code == 201, answer.text
            worker = CampaignWorker(context, owner="test-runner")
            yield Campaigns(client, clock, context, tenant, tenants, answer.json()["id"], worker)
