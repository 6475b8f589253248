"""Fixtures for the send endpoints: a team with a verified domain, on a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from mailbridge.api.app import create_app
from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.services.domains import _domains as domains
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Email, EmailEvent
from tests.integration.conftest import USER_AGENT, Tenant, Tenants

START = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
SENDER = "Shop <news@shop.io>"


@dataclass
class Sending:
    """A client whose app runs on ``clock``, and a tenant with the verified shop.io."""

    client: httpx.AsyncClient
    clock: FakeClock
    context: ServiceContext
    tenant: Tenant
    tenants: Tenants

    async def send(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        return await self.client.post(
            "/emails", json=body, headers={**self.tenant.headers, **headers}
        )

    async def batch(self, items: list[dict[str, Any]], **headers: str) -> httpx.Response:
        return await self.client.post(
            "/emails/batch", json=items, headers={**self.tenant.headers, **headers}
        )

    async def emails(self) -> list[Email]:
        async with self.context.database.session() as session:
            rows = await session.scalars(
                select(Email).where(Email.team_id == self.tenant.team_id).order_by(Email.id)
            )
            return list(rows.all())

    async def count(self) -> int:
        async with self.context.database.session() as session:
            query = (
                select(func.count()).select_from(Email).where(Email.team_id == self.tenant.team_id)
            )
            return int(await session.scalar(query) or 0)

    async def events(self, email_id: str) -> list[EmailEvent]:
        async with self.context.database.session() as session:
            rows = await session.scalars(
                select(EmailEvent).where(EmailEvent.email_id == email_id).order_by(EmailEvent.id)
            )
            return list(rows.all())


def email(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "from": SENDER, "to": ["ann@corp.io"], "subject": "Hello", "html": "<p>Hi</p>",
    }  # fmt: skip
    body.update(fields)
    return body


async def add_domain(context: ServiceContext, team_id: str, name: str = "shop.io") -> None:
    async with context.database.session() as session:
        await domains.create_domain(
            session, context.clock, context.settings, team_id, name, verified=True
        )


@pytest.fixture
def send_settings(settings: Settings) -> Settings:
    return settings


@pytest.fixture
async def sending(send_settings: Settings, database: Database) -> AsyncIterator[Sending]:
    clock = FakeClock(START)
    context = ServiceContext(settings=send_settings, database=database, clock=clock)
    app: FastAPI = create_app(context=context)
    tenants = Tenants(context)
    tenant = await tenants.create(plan="free")
    await add_domain(context, tenant.team_id)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://mailbridge.test",
            headers={"User-Agent": USER_AGENT},
        ) as client:
            yield Sending(client, clock, context, tenant, tenants)
