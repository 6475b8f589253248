"""A key limited to one domain acts only on that domain: its emails (read, reschedule,
cancel) and the automations its events start or resume. Another domain of the same
team is `401 restricted_api_key`, or, for events, simply out of the key's reach."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.webhooks._activity_dispatch import default_consumers
from mailbridge.storage.tables import AutomationRun, Email, Team
from tests.integration.automation_setup import engine
from tests.integration.conftest import bearer
from tests.integration.email_factory import add_domain
from tests.integration.sending import START, Sending, email
from tests.integration.test_auth import assert_error

pytestmark = pytest.mark.integration

OTHER = "other.io"


@dataclass
class Scoped:
    """shop.io and other.io verified on one (pro) team; a sending key limited to shop.io."""

    sending: Sending
    headers: dict[str, str]  # the shop.io key's

    @property
    def full(self) -> dict[str, str]:
        return self.sending.tenant.headers

    async def schedule(self, sender: str) -> str:
        response = await self.sending.send(email(**{"from": sender, "scheduled_at": "in 2 hours"}))
        assert response.status_code == 200, response.text
        return str(response.json()["id"])

    async def email_row(self, email_id: str) -> Email:
        async with self.sending.context.database.session() as session:
            row = await session.get(Email, email_id)
        assert row is not None
        return row

    async def automation(self, domain: str, steps: list[dict[str, Any]], **graph: Any) -> str:
        """An enabled automation on ``domain`` whose send steps use a template from
        ``news@<domain>``; its id."""
        client = self.sending.client
        sender = f"News <news@{domain}>"
        template = {"name": f"From {domain}", "from": sender, "subject": "Hi", "html": "<p>Hi</p>"}
        response = await client.post("/templates", json=template, headers=self.full)
        assert response.status_code == 201, response.text
        template_id = response.json()["id"]
        response = await client.post(f"/templates/{template_id}/publish", headers=self.full)
        assert response.status_code == 200, response.text
        for step in steps:
            if step["type"] == "send_email":
                step["config"] = {"template": {"id": template_id}}
        body = {
            "name": f"Mail from {domain}", "domain": domain, "status": "enabled",
            "steps": steps, **graph,
        }  # fmt: skip
        response = await client.post("/automations", json=body, headers=self.full)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    async def event(self, headers: dict[str, str], **body: Any) -> dict[str, Any]:
        response = await self.sending.client.post("/events/send", json=body, headers=headers)
        assert response.status_code == 202, response.text
        answer: dict[str, Any] = response.json()
        return answer

    async def runs(self) -> list[AutomationRun]:
        async with self.sending.context.database.session() as session:
            rows = await session.scalars(
                select(AutomationRun)
                .where(AutomationRun.team_id == self.sending.tenant.team_id)
                .order_by(AutomationRun.id)
            )
            return list(rows.all())

    async def run_of(self, automation_id: str) -> AutomationRun:
        (run,) = [run for run in await self.runs() if run.automation_id == automation_id]
        return run

    async def mailed(self) -> list[tuple[str, list[str]]]:
        """(from, to) of every email the team has stored."""
        return sorted((row.from_email, row.to) for row in await self.sending.emails())


@pytest.fixture
async def scoped(sending: Sending) -> Scoped:
    async with sending.context.database.session() as session:
        await session.execute(
            update(Team).where(Team.id == sending.tenant.team_id).values(plan="pro")
        )
        await session.commit()
    await add_domain(sending.context, sending.tenant.team_id, OTHER)
    _id, token = await sending.tenants.key(
        sending.tenant, Permission.SENDING_ACCESS, domain="shop.io"
    )
    return Scoped(sending, bearer(token))


async def test_a_scoped_key_reads_and_changes_only_its_domains_emails(scoped: Scoped) -> None:
    client = scoped.sending.client
    ours = await scoped.schedule("Shop <news@shop.io>")
    theirs = await scoped.schedule(f"Other <hi@{OTHER}>")

    moved = await client.patch(
        f"/emails/{theirs}", json={"scheduled_at": "in 3 days"}, headers=scoped.headers
    )
    assert_error(moved, 401, "restricted_api_key")
    assert "shop.io" in moved.json()["message"]
    canceled = await client.post(f"/emails/{theirs}/cancel", headers=scoped.headers)
    assert_error(canceled, 401, "restricted_api_key")
    row = await scoped.email_row(theirs)
    assert row.status == "scheduled" and row.due_at == START + timedelta(hours=2)
    assert [event.type for event in await scoped.sending.events(theirs)] == ["scheduled"]
    # Reading is no part of sending: nothing of either domain shows.
    for path in ("/emails", f"/emails/{theirs}", f"/emails/{ours}"):
        assert_error(await client.get(path, headers=scoped.headers), 401, "restricted_api_key")
    # An unknown id stays unknown.
    unknown = await client.post(
        "/emails/00000000-0000-7000-8000-000000000000/cancel", headers=scoped.headers
    )
    assert_error(unknown, 404, "not_found")

    moved = await client.patch(
        f"/emails/{ours}", json={"scheduled_at": "in 3 days"}, headers=scoped.headers
    )
    assert moved.status_code == 200 and moved.json() == {"object": "email", "id": ours}
    assert (await scoped.email_row(ours)).due_at == START + timedelta(days=3)
    canceled = await client.post(f"/emails/{ours}/cancel", headers=scoped.headers)
    assert canceled.status_code == 200, canceled.text
    assert (await scoped.email_row(ours)).status == "canceled"

    # A key of any domain still changes them all.
    canceled = await client.post(f"/emails/{theirs}/cancel", headers=scoped.full)
    assert canceled.status_code == 200, canceled.text
    assert (await scoped.email_row(theirs)).status == "canceled"


async def test_a_scoped_keys_event_starts_only_its_domains_automations(scoped: Scoped) -> None:
    def steps() -> list[dict[str, Any]]:
        return [
            {"key": "start", "type": "trigger", "config": {"event_name": "order.paid"}},
            {"key": "mail", "type": "send_email", "config": {}},
        ]

    connections = [{"from": "start", "to": "mail"}]
    ours = await scoped.automation("shop.io", steps(), connections=connections)
    theirs = await scoped.automation(OTHER, steps(), connections=connections)

    answer = await scoped.event(scoped.headers, event="order.paid", email="eve@corp.io")
    (run,) = await scoped.runs()
    assert run.automation_id == ours and answer["runs_started"] == [run.id]
    await engine(scoped.sending.context).run_due()
    assert await scoped.mailed() == [("news@shop.io", ["eve@corp.io"])]
    # Nor can the key look at, or switch on, the automations it cannot reach.
    for response in (
        await scoped.sending.client.get(f"/automations/{theirs}", headers=scoped.headers),
        await scoped.sending.client.patch(
            f"/automations/{theirs}", json={"status": "disabled"}, headers=scoped.headers
        ),
    ):
        assert_error(response, 401, "restricted_api_key")

    # The same event from a key of any domain starts both.
    answer = await scoped.event(scoped.full, event="order.paid", email="ann@corp.io")
    assert len(answer["runs_started"]) == 2
    assert sorted(run.automation_id for run in await scoped.runs()) == sorted([ours, ours, theirs])


async def test_a_scoped_key_matching_nothing_of_its_domain_starts_nothing(scoped: Scoped) -> None:
    steps = [
        {"key": "start", "type": "trigger", "config": {"event_name": "order.paid"}},
        {"key": "mail", "type": "send_email", "config": {}},
    ]
    await scoped.automation(OTHER, steps, connections=[{"from": "start", "to": "mail"}])
    answer = await scoped.event(scoped.headers, event="order.paid", email="eve@corp.io")
    assert answer["runs_started"] == [] and answer["runs_resumed"] == []
    await engine(scoped.sending.context).run_due()
    assert await scoped.runs() == [] and await scoped.mailed() == []


async def test_a_scoped_keys_event_resumes_only_its_domains_waiting_runs(scoped: Scoped) -> None:
    def steps() -> list[dict[str, Any]]:
        return [
            {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}},
            {"key": "wait", "type": "wait_for_event",
             "config": {"event_name": "user.confirmed", "timeout": "1 day"}},
            {"key": "mail", "type": "send_email", "config": {}},
        ]  # fmt: skip

    connections = [
        {"from": "start", "to": "wait"},
        {"from": "wait", "to": "mail", "type": "event_received"},
    ]
    ours = await scoped.automation("shop.io", steps(), connections=connections)
    theirs = await scoped.automation(OTHER, steps(), connections=connections)
    started = await scoped.event(scoped.full, event="user.signed_up", email="eve@corp.io")
    assert len(started["runs_started"]) == 2
    await engine(scoped.sending.context).run_due()
    assert [run.waiting_event for run in await scoped.runs()] == ["user.confirmed"] * 2

    answer = await scoped.event(scoped.headers, event="user.confirmed", email="eve@corp.io")
    assert answer["runs_resumed"] == [(await scoped.run_of(ours)).id]
    await engine(scoped.sending.context).run_due()
    assert (await scoped.run_of(ours)).status == "completed"
    left = await scoped.run_of(theirs)
    assert left.status == "running" and left.waiting_event == "user.confirmed"
    assert await scoped.mailed() == [("news@shop.io", ["eve@corp.io"])]


async def test_a_contact_a_scoped_keys_event_makes_is_news_for_its_domain_only(
    scoped: Scoped,
) -> None:
    def steps(event_name: str) -> list[dict[str, Any]]:
        return [
            {"key": "start", "type": "trigger", "config": {"event_name": event_name}},
            {"key": "mail", "type": "send_email", "config": {}},
        ]

    connections = [{"from": "start", "to": "mail"}]
    await scoped.automation("shop.io", steps("order.paid"), connections=connections)
    welcome = await scoped.automation(OTHER, steps("contact.created"), connections=connections)
    context = scoped.sending.context
    dispatcher = ActivityDispatcher(context, default_consumers(context))

    # The key's event enrols a new address on shop.io: the contact it makes must not
    # start other.io's welcome, which would mail whomever the key named from other.io.
    await scoped.event(scoped.headers, event="order.paid", email="eve@corp.io")
    assert await dispatcher.dispatch_all() >= 1
    await engine(context).run_due()
    assert [run.automation_id for run in await scoped.runs()] != [] and all(
        run.automation_id != welcome for run in await scoped.runs()
    )
    assert await scoped.mailed() == [("news@shop.io", ["eve@corp.io"])]

    # The same from a key of any domain: the new contact is everybody's news.
    await scoped.event(scoped.full, event="order.paid", email="ann@corp.io")
    assert await dispatcher.dispatch_all() >= 1
    await engine(context).run_due()
    assert (await scoped.run_of(welcome)).status == "completed"
    assert (f"news@{OTHER}", ["ann@corp.io"]) in await scoped.mailed()
