"""Fixtures of the automation tests: the shop.io team with a published template and a
segment, a sample graph, and run rows written by hand (as the engine would)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from mailbridge.storage.tables import AutomationRun, AutomationRunStep, AutomationVersion
from tests.integration.conftest import Tenant
from tests.integration.sending import Sending

TEMPLATE: dict[str, Any] = {
    "name": "Welcome",
    "alias": "welcome",
    "from": "Shop <news@shop.io>",
    "subject": "Welcome!",
    "html": "<p>Hello</p>",
    "text": "Hello",
}


def graph(template_id: str, segment_id: str) -> dict[str, Any]:
    """A public graph: trigger → send → delay → condition (met: segment; not met: wait)."""
    return {
        "steps": [
            {"key": "start", "type": "trigger", "config": {"event_name": "user.created"}},
            {"key": "welcome", "type": "send_email", "config": {"template": {"id": template_id}}},
            {"key": "pause", "type": "delay", "config": {"duration": "2 days"}},
            {
                "key": "check",
                "type": "condition",
                "config": {"type": "rule", "field": "event.plan", "operator": "eq", "value": "pro"},
            },
            {"key": "vip", "type": "add_to_segment", "config": {"segment_id": segment_id}},
            {
                "key": "nudge",
                "type": "wait_for_event",
                "config": {"event_name": "user.upgraded", "timeout": "3 days"},
            },
        ],
        "connections": [
            {"from": "start", "to": "welcome"},
            {"from": "welcome", "to": "pause", "type": "default"},
            {"from": "pause", "to": "check"},
            {"from": "check", "to": "vip", "type": "condition_met"},
            {"from": "check", "to": "nudge", "type": "condition_not_met"},
        ],
    }


@dataclass
class Shop:
    """The sending team (shop.io verified, fake clock) with a template and a segment."""

    sending: Sending
    template_id: str
    segment_id: str

    @property
    def client(self) -> httpx.AsyncClient:
        return self.sending.client

    @property
    def tenant(self) -> Tenant:
        return self.sending.tenant

    @property
    def headers(self) -> dict[str, str]:
        return self.sending.tenant.headers

    def body(self, **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": "Onboarding",
            "domain": "shop.io",
            **graph(self.template_id, self.segment_id),
        }
        body.update(fields)
        return body

    async def create(self, **fields: Any) -> dict[str, Any]:
        response = await self.client.post(
            "/automations", json=self.body(**fields), headers=self.headers
        )
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def get(self, automation_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/automations/{automation_id}", headers=self.headers)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    async def patch(self, automation_id: str, **fields: Any) -> httpx.Response:
        return await self.client.patch(
            f"/automations/{automation_id}", json=fields, headers=self.headers
        )

    async def versions(self, automation_id: str) -> list[AutomationVersion]:
        async with self.sending.context.database.session() as session:
            rows = await session.scalars(
                select(AutomationVersion)
                .where(AutomationVersion.automation_id == automation_id)
                .order_by(AutomationVersion.version)
            )
            return list(rows.all())

    async def add_run(
        self,
        automation_id: str,
        *,
        status: str = "running",
        version: int = 1,
        contact_id: str | None = None,
        step_key: str | None = "pause",
        phase: str | None = None,
        created_at: datetime | None = None,
        steps: Sequence[tuple[str, str]] = (),
    ) -> AutomationRun:
        """A run row as the engine writes it, with executed step records."""
        now = created_at or self.sending.clock.now()
        running = status == "running"
        run = AutomationRun(
            team_id=self.tenant.team_id,
            automation_id=automation_id,
            version=version,
            contact_id=contact_id,
            status=status,
            step_key=step_key,
            phase=phase or ("sleeping" if running else "done"),
            due_at=now + timedelta(days=2) if running else None,
            waiting_event="user.upgraded" if running else None,
            context={"event": {"plan": "pro"}},
            error=None if status != "failed" else "the contact no longer exists",
            created_at=now,
            updated_at=now,
            completed_at=None if running else now,
        )
        async with self.sending.context.database.session() as session:
            session.add(run)
            await session.flush()
            for sequence, (key, kind) in enumerate(steps):
                session.add(
                    AutomationRunStep(
                        run_id=run.id,
                        step_id=None,
                        step_key=key,
                        sequence=sequence,
                        type=kind,
                        status="completed",
                        started_at=now + timedelta(seconds=sequence),
                        completed_at=now + timedelta(seconds=sequence),
                        output={"n": sequence},
                        error=None,
                    )
                )
            await session.commit()
        return run

    async def run(self, run_id: str) -> AutomationRun | None:
        async with self.sending.context.database.session() as session:
            return await session.get(AutomationRun, run_id)


async def make_shop(sending: Sending) -> Shop:
    client, headers = sending.client, sending.tenant.headers
    response = await client.post("/templates", json=TEMPLATE, headers=headers)
    assert response.status_code == 201, response.text
    template_id = response.json()["id"]
    response = await client.post(f"/templates/{template_id}/publish", headers=headers)
    assert response.status_code == 200, response.text
    response = await client.post("/segments", json={"name": "VIP"}, headers=headers)
    assert response.status_code == 201, response.text
    return Shop(sending, template_id, response.json()["id"])


@pytest.fixture
async def shop(sending: Sending) -> Shop:
    return await make_shop(sending)


def assert_invalid(response: httpx.Response, *keys: str | None) -> list[dict[str, Any]]:
    """A 422 validation_error listing graph problems about exactly these step keys."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["statusCode"] == 422 and body["name"] == "validation_error"
    errors: list[dict[str, Any]] = body["errors"]
    assert sorted({str(e["key"]) for e in errors}) == sorted({str(k) for k in keys})
    for error in errors:
        text = f"{error['key']}: {error['message']}" if error["key"] else error["message"]
        assert text in body["message"]
    return errors
