"""Helpers of the engine tests: a published template, a segment, an enabled automation
written straight to the database, and reading back runs, step records and activity.

Also the seeding that the crash test and bench/engine.py share: a pro team with a
verified domain, a published template and a segment, and a 5-step graph with a send.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select

from mailbridge.engine.engine import Engine
from mailbridge.engine.memory import MemoryReferences
from mailbridge.engine.ports import TemplateContent
from mailbridge.engine.validation import build
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.audiences._audiences import default_audience
from mailbridge.services.audiences._segment_filters import SegmentFilter
from mailbridge.services.audiences._segments import create_segment
from mailbridge.services.automations._backend import sql_engine
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.templates import _content as template_content
from mailbridge.services.templates import _templates as templates
from mailbridge.steps import VOCABULARY
from mailbridge.storage.tables import (
    ActivityEvent,
    Automation,
    AutomationRun,
    AutomationRunStep,
    AutomationVersion,
)
from tests.integration.email_factory import add_domain

DOMAIN = "shop.io"
TEMPLATE: dict[str, Any] = {
    "name": "Welcome",
    "from": "Shop <news@shop.io>",
    "subject": "Welcome",
    "html": "<p>Plan {{{PLAN}}} for {{{contact.email}}}</p>",
    "text": "Plan {{{PLAN}}}",
    "variables": [{"key": "PLAN", "type": "string", "fallback_value": "free"}],
}


async def published_template(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    """A template created and published over HTTP; its id."""
    response = await client.post("/templates", json=TEMPLATE, headers=headers)
    assert response.status_code == 201, response.text
    template_id = str(response.json()["id"])
    response = await client.post(f"/templates/{template_id}/publish", headers=headers)
    assert response.status_code == 200, response.text
    return template_id


async def segment(context: ServiceContext, team_id: str, audience_id: str) -> str:
    """A segment of ``audience_id`` whose members are only those added (by a step)."""
    async with context.database.session() as session:
        created = await create_segment(
            session, context.clock, team_id, "Joined", SegmentFilter(status="members_only"),
            audience_id,
        )  # fmt: skip
        return created.id


async def install(
    context: ServiceContext,
    team_id: str,
    steps: list[dict[str, Any]],
    connections: list[dict[str, Any]],
    *,
    template_id: str | None = None,
    segment_ids: Iterable[str] = (),
    name: str = "Automation",
    status: str = "enabled",
) -> str:
    """An automation of the team's default audience sending from shop.io, with ``steps``
    and ``connections`` (public vocabulary) as version 1; its id."""
    async with context.database.session() as session:
        known: dict[str, TemplateContent] = {}
        if template_id is not None:
            published = await templates.published_template(session, team_id, template_id)
            known[template_id] = TemplateContent(
                published.template_id, published.from_address, published.subject,
                published.html, published.text,
            )  # fmt: skip
        references = MemoryReferences(domain=DOMAIN, templates=known, segments=set(segment_ids))
        graph = build(VOCABULARY, steps, connections, references)
        audience = await default_audience(session, context.clock, team_id)
        now = context.clock.now()
        automation = Automation(
            team_id=team_id, audience_id=audience.id, domain=DOMAIN, name=name, status=status,
            trigger_event=graph.trigger.event_name, trigger_key=graph.trigger.key,
            trigger_config=None, version=1, created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(automation)
        await session.flush()
        session.add(
            AutomationVersion(
                automation_id=automation.id, version=1, graph=graph.as_dict(), created_at=now
            )
        )
        await session.commit()
        return automation.id


def engine(context: ServiceContext) -> Engine:
    return sql_engine(context)


async def runs(context: ServiceContext, automation_id: str) -> list[AutomationRun]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(AutomationRun)
            .where(AutomationRun.automation_id == automation_id)
            .order_by(AutomationRun.created_at, AutomationRun.id)
        )
        return list(rows.all())


async def steps_of(context: ServiceContext, run_id: str) -> list[tuple[str, str]]:
    """(step key, status) of a run's executed steps, in execution order."""
    async with context.database.session() as session:
        rows = await session.scalars(
            select(AutomationRunStep)
            .where(AutomationRunStep.run_id == run_id)
            .order_by(AutomationRunStep.sequence)
        )
        return [(row.step_key, row.status) for row in rows]


async def activity(context: ServiceContext, team_id: str, prefix: str) -> list[ActivityEvent]:
    """The team's activity events whose type starts with ``prefix``, oldest first."""
    async with context.database.session() as session:
        rows = await session.scalars(
            select(ActivityEvent)
            .where(ActivityEvent.team_id == team_id, ActivityEvent.type.startswith(prefix))
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return list(rows.all())


def five_steps(template_id: str, segment_id: str) -> list[dict[str, Any]]:
    """A trigger and five steps without delays: send, update, condition, update, segment."""
    return [
        {"key": "start", "type": "trigger", "config": {"event_name": "signed_up"}},
        {"key": "welcome", "type": "send_email", "config": {"template": {"id": template_id}}},
        {"key": "greet", "type": "contact_update", "config": {"first_name": "Greeted"}},
        {"key": "check", "type": "condition",
         "config": {"type": "rule", "field": "contact.first_name", "operator": "eq",
                    "value": "Greeted"}},
        {"key": "mark", "type": "contact_update", "config": {"last_name": "Done"}},
        {"key": "join", "type": "add_to_segment", "config": {"segment_id": segment_id}},
    ]  # fmt: skip


FIVE_STEP_CONNECTIONS = [
    {"from": "start", "to": "welcome"}, {"from": "welcome", "to": "greet"},
    {"from": "greet", "to": "check"}, {"from": "check", "to": "mark", "type": "condition_met"},
    {"from": "mark", "to": "join"},
]  # fmt: skip


@dataclass(frozen=True)
class Workspace:
    team_id: str
    audience_id: str
    template_id: str
    segment_id: str


async def pro_workspace(context: ServiceContext, name: str) -> Workspace:
    """A pro team with shop.io verified, a published template and a segment."""
    async with context.database.session() as session:
        team = await teams.create_team(session, context.clock, name, "pro")
        await session.commit()
    await add_domain(context, team.id)
    async with context.database.session() as session:
        content = template_content.TemplateContent(
            name="welcome", html="<p>Hi {{{contact.email}}}</p>",
            from_address="Shop <news@shop.io>", subject="Welcome",
        )  # fmt: skip
        template = await templates.create_template(session, context.clock, team.id, content)
        await templates.publish_template(session, context.clock, team.id, template.template.id)
        audience = await default_audience(session, context.clock, team.id)
    segment_id = await segment(context, team.id, audience.id)
    return Workspace(team.id, audience.id, template.template.id, segment_id)
