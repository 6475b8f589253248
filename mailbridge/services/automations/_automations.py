"""Automations (spec §2.2, §3.2, §4.7): create, read, update, delete, stop, duplicate.

An automation is its row (name, status, trigger, audience, domain) plus the graph of
its current version (:mod:`mailbridge.services.automations._graphs`); the step routes
live in :mod:`mailbridge.services.automations._steps`, runs in
:mod:`mailbridge.services.automations._runs`.

Status moves freely between ``disabled`` and ``enabled``; enabling checks the graph
again (a template deleted, a segment gone since). Disabling starts no new runs and
leaves running ones alone; stopping also cancels them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.engine.graph import Graph
from mailbridge.errors import ValidationError
from mailbridge.services import audiences, domains
from mailbridge.services.automations._domain import derived_domain
from mailbridge.services.automations._graphs import (
    DISABLE_FIRST,
    add_version,
    check_graph,
    graph_of,
    lock_automation,
    recheck,
    renamed_trigger,
    with_trigger,
)
from mailbridge.services.automations._runs import cancel_running, enrollments
from mailbridge.steps import VOCABULARY
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned
from mailbridge.storage.tables import Automation
from mailbridge.storage.types import new_id

STATUSES = ("enabled", "disabled")
TRIGGER_CONFIG_FIELDS = ("allow_reentry",)
MAX_AUTOMATION_NAME_LENGTH = 200
COPY_SUFFIX = " (copy)"


@dataclass(frozen=True)
class NewAutomation:
    """A create body; ``steps`` and ``connections`` are raw (the graph check reads them)."""

    name: str
    domain: str | None = None  # None: derived from the send steps (``_domain``)
    audience_id: str | None = None
    status: str = "disabled"
    trigger: str | None = None
    trigger_config: Any = None
    steps: Any = None
    connections: Any = None


@dataclass(frozen=True)
class AutomationState:
    automation: Automation
    graph: Graph  # the current version, stored vocabulary
    enrollments: dict[str, int]


# -- views --------------------------------------------------------------------------------


def automation_view(state: AutomationState) -> dict[str, Any]:
    automation, public = state.automation, VOCABULARY.public_view(state.graph)
    return {
        "object": "automation",
        "id": automation.id,
        "audience_id": automation.audience_id,
        "domain": automation.domain,
        "name": automation.name,
        "trigger": automation.trigger_event,
        "status": automation.status,
        "trigger_config": automation.trigger_config,
        "trigger_key": public["trigger_key"],
        "steps": public["steps"],
        "connections": public["connections"],
        "enrollments": dict(state.enrollments),
        "created_at": isoformat_ms(automation.created_at),
        "updated_at": isoformat_ms(automation.updated_at),
    }


def automation_list_item(automation: Automation) -> dict[str, Any]:
    return {
        "object": "automation",
        "id": automation.id,
        "name": automation.name,
        "status": automation.status,
        "trigger": automation.trigger_event,
        "audience_id": automation.audience_id,
        "domain": automation.domain,
        "created_at": isoformat_ms(automation.created_at),
        "updated_at": isoformat_ms(automation.updated_at),
    }


# -- field checks -------------------------------------------------------------------------


def _name(value: object) -> str:
    name = value.strip() if isinstance(value, str) else ""
    if not name or len(name) > MAX_AUTOMATION_NAME_LENGTH:
        raise ValidationError(f"`name` must be 1 to {MAX_AUTOMATION_NAME_LENGTH} characters.")
    return name


def _status(value: object) -> str:
    if value not in STATUSES:
        raise ValidationError("`status` must be `enabled` or `disabled`.")
    return str(value)


def _trigger_config(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValidationError("`trigger_config` must be an object or null.")
    unknown = sorted(set(value) - set(TRIGGER_CONFIG_FIELDS))
    if unknown:
        raise ValidationError(
            f"`trigger_config` does not support {', '.join(unknown)} "
            f"(supported: {', '.join(TRIGGER_CONFIG_FIELDS)})."
        )
    if "allow_reentry" in value and not isinstance(value["allow_reentry"], bool):
        raise ValidationError("`trigger_config.allow_reentry` must be true or false.")
    return dict(value)


async def _sending_domain(session: AsyncSession, team_id: str, name: object) -> str:
    domain = await domains.sending_domain(session, team_id, name) if isinstance(name, str) else None
    if domain is None:
        raise ValidationError(
            f"`domain` {name} is not a domain of this account that may send; verify it first."
        )
    return domain.name


async def _state(session: AsyncSession, automation: Automation, graph: Graph) -> AutomationState:
    return AutomationState(automation, graph, await enrollments(session, automation.id))


# -- routes -------------------------------------------------------------------------------


async def create_automation(
    session: AsyncSession, clock: Clock, team_id: str, new: NewAutomation
) -> AutomationState:
    name = _name(new.name)
    status = _status(new.status)
    trigger_config = _trigger_config(new.trigger_config)
    given = (
        new.domain if new.domain is not None else await derived_domain(session, team_id, new.steps)
    )
    domain = await _sending_domain(session, team_id, given)
    # Before anything is added to the session: making the default audience commits.
    audience = await audiences.resolve_audience(session, clock, team_id, new.audience_id)
    steps, problems = with_trigger(new.steps, new.trigger, domain)
    graph = await check_graph(session, team_id, domain, steps, new.connections, problems=problems)
    now = clock.now()
    automation = Automation(
        id=new_id(), team_id=team_id, audience_id=audience.id, domain=domain, name=name,
        status=status, trigger_config=trigger_config, version=0, created_at=now,
        updated_at=now,
    )  # fmt: skip
    session.add(automation)
    add_version(session, clock, automation, graph)
    await session.commit()
    return AutomationState(automation, graph, {"active": 0, "completed": 0})


async def get_automation(
    session: AsyncSession, team_id: str, automation_id: str
) -> AutomationState:
    automation = await get_owned(session, Automation, team_id, automation_id, "Automation")
    return await _state(session, automation, await graph_of(session, automation))


async def find_automation(session: AsyncSession, team_id: str, automation_id: str) -> Automation:
    return await get_owned(session, Automation, team_id, automation_id, "Automation")


async def list_automations(
    session: AsyncSession, team_id: str, page: PageRequest, status: str | None = None
) -> Page[Automation]:
    query = select(Automation).where(Automation.team_id == team_id)
    if status is not None:  # Resend's SDKs filter by status
        query = query.where(Automation.status == _status(status))
    return await paginate(session, query, Automation, page)


def _not_null(changes: dict[str, Any], *fields: str) -> None:
    for field in fields:
        if field in changes and changes[field] is None:
            raise ValidationError(f"`{field}` cannot be null.")


async def update_automation(
    session: AsyncSession, clock: Clock, team_id: str, automation_id: str, changes: dict[str, Any]
) -> AutomationState:
    """Apply a PATCH body: ``name``, ``status``, ``trigger_config`` and a new graph
    (``steps``, ``connections``, ``trigger``: only while disabled, as a new version)."""
    _not_null(changes, "name", "status", "trigger", "steps", "connections")
    automation = await lock_automation(session, team_id, automation_id)
    if "domain" in changes and str(changes["domain"]).strip().lower() != automation.domain:
        raise ValidationError("An automation's `domain` cannot be changed.")
    if "audience_id" in changes and changes["audience_id"] != automation.audience_id:
        raise ValidationError("An automation's `audience_id` cannot be changed.")
    if "name" in changes:
        automation.name = _name(changes["name"])
    if "trigger_config" in changes:
        automation.trigger_config = _trigger_config(changes["trigger_config"])
    status = _status(changes["status"]) if "status" in changes else automation.status
    graph = await graph_of(session, automation)
    rewrites = {"steps", "connections", "trigger"} & changes.keys()
    if rewrites:
        if automation.status == "enabled" and status == "enabled":
            raise ValidationError(
                f"The steps of an enabled automation cannot change. {DISABLE_FIRST}"
            )
        public = VOCABULARY.public_view(graph)
        steps = changes["steps"] if "steps" in changes else public["steps"]
        connections = changes["connections"] if "connections" in changes else public["connections"]
        trigger = changes.get("trigger")
        if trigger is not None and "steps" not in changes:
            steps = renamed_trigger(steps, trigger)
        steps, problems = with_trigger(steps, trigger, automation.domain)
        rebuilt = await check_graph(
            session, team_id, automation.domain, steps, connections,
            previous=graph, problems=problems,
        )  # fmt: skip
        if rebuilt.as_dict() != graph.as_dict():
            add_version(session, clock, automation, rebuilt)
            graph = rebuilt
    elif status == "enabled" and automation.status != "enabled":
        await recheck(session, automation, graph)
    automation.status = status
    automation.updated_at = clock.now()
    await session.commit()
    return await _state(session, automation, graph)


async def delete_automation(session: AsyncSession, team_id: str, automation_id: str) -> str:
    automation = await find_automation(session, team_id, automation_id)
    # The database cascades to versions, runs and their step records.
    await session.execute(delete(Automation).where(Automation.id == automation.id))
    await session.commit()
    return automation.id


async def stop_automation(
    session: AsyncSession, clock: Clock, team_id: str, automation_id: str
) -> AutomationState:
    """Disable the automation and cancel its running runs, in one transaction."""
    automation = await lock_automation(session, team_id, automation_id)
    automation.status = "disabled"
    automation.updated_at = clock.now()
    await cancel_running(session, clock, automation)
    await session.commit()
    return await _state(session, automation, await graph_of(session, automation))


def _copy_name(name: str) -> str:
    return name[: MAX_AUTOMATION_NAME_LENGTH - len(COPY_SUFFIX)] + COPY_SUFFIX


async def duplicate_automation(
    session: AsyncSession, clock: Clock, team_id: str, automation_id: str
) -> AutomationState:
    """A disabled copy with the same graph (as stored: the same template snapshots) and
    new step ids."""
    source = await find_automation(session, team_id, automation_id)
    graph = await graph_of(session, source)
    copied = Graph(
        graph.trigger,
        tuple(replace(step, id=str(uuid.uuid4())) for step in graph.steps),
        graph.connections,
    )
    now = clock.now()
    automation = Automation(
        id=new_id(), team_id=team_id, audience_id=source.audience_id, domain=source.domain,
        name=_copy_name(source.name), status="disabled",
        trigger_config=dict(source.trigger_config) if source.trigger_config is not None else None,
        version=0, created_at=now, updated_at=now,
    )  # fmt: skip
    session.add(automation)
    add_version(session, clock, automation, copied)
    await session.commit()
    return AutomationState(automation, copied, {"active": 0, "completed": 0})
