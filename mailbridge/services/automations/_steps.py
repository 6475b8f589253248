"""The step routes (spec §4.8): add, change and remove one step of a disabled automation.

They take the public vocabulary and answer the *stored* step (``send``, ``wait``,
flattened send config). Each change rewrites the public graph around the step,
checks the whole graph and stores it as a new version, so the graph stays valid:
a new step is connected from ``after``; a removed step's single predecessor and
single ``default`` successor are joined.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.engine.graph import Graph, Step
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.automations._graphs import (
    DISABLE_FIRST,
    add_version,
    check_graph,
    graph_of,
    lock_automation,
)
from mailbridge.steps import BY_PUBLIC_NAME, VOCABULARY
from mailbridge.storage.tables import Automation

MAX_KEY_LENGTH = 100


@dataclass(frozen=True)
class NewStep:
    type: str
    key: str | None = None
    config: Any = None
    after: str | None = None  # the step it follows; default: the last one, or the trigger
    connection_type: str = "default"


def _kind(value: object) -> str:
    if not isinstance(value, str) or value not in BY_PUBLIC_NAME:
        raise ValidationError(f"`type` must be one of {', '.join(BY_PUBLIC_NAME)}.")
    return value


def _key(value: object, taken: set[str]) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_KEY_LENGTH:
        raise ValidationError(f"`key` must be 1 to {MAX_KEY_LENGTH} characters.")
    if value in taken:
        raise ValidationError(f"`key` {value!r} is already used by a step of this automation.")
    return value


def _generated_key(kind: str, taken: set[str]) -> str:
    n = 1
    while f"{kind}_{n}" in taken:
        n += 1
    return f"{kind}_{n}"


def _public_config(kind: str, config: object) -> dict[str, Any]:
    """A step route's config; a send config in the stored shape (``template_id``, as
    these routes answer it) is read as ``template.id``."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ValidationError("`config` must be an object.")
    if kind == "send_email" and "template" not in config and "template_id" in config:
        config = {**config, "template": {"id": config["template_id"]}}
    return dict(config)


async def _open(
    session: AsyncSession, team_id: str, automation_id: str
) -> tuple[Automation, Graph]:
    automation = await lock_automation(session, team_id, automation_id)
    return automation, await graph_of(session, automation)


def _editable(automation: Automation) -> None:
    if automation.status == "enabled":
        raise ValidationError(
            f"Steps change only while the automation is disabled. {DISABLE_FIRST}"
        )


def find_step(graph: Graph, step_ref: str) -> Step:
    """The executable step with this id (or, failing that, this key)."""
    for step in graph.steps:
        if step.id == step_ref:
            return step
    for step in graph.steps:
        if step.key == step_ref:
            return step
    raise NotFound("Step not found.")


async def _store(
    session: AsyncSession,
    clock: Clock,
    automation: Automation,
    steps: list[Any],
    connections: list[Any],
    previous: Graph,
) -> Graph:
    graph = await check_graph(
        session, automation.team_id, automation.domain, steps, connections, previous=previous
    )
    add_version(session, clock, automation, graph)
    await session.commit()
    return graph


async def add_step(
    session: AsyncSession, clock: Clock, team_id: str, automation_id: str, new: NewStep
) -> Step:
    automation, graph = await _open(session, team_id, automation_id)
    _editable(automation)
    kind = _kind(new.type)
    if new.connection_type not in VOCABULARY.connection_types:
        known = ", ".join(VOCABULARY.connection_types)
        raise ValidationError(f"`connection_type` must be one of {known}.")
    public = VOCABULARY.public_view(graph)
    steps: list[dict[str, Any]] = public["steps"]
    connections: list[dict[str, Any]] = public["connections"]
    taken = {step["key"] for step in steps}
    key = _generated_key(kind, taken) if new.key is None else _key(new.key, taken)
    after = new.after
    if after is None:
        last = max(graph.steps, key=lambda step: step.position, default=None)
        after = last.key if last is not None else graph.trigger.key
    elif after not in taken:
        raise ValidationError(f"`after` {after!r} names no step of this automation.")
    # A step inserted where a connection already leaves takes it over and continues to
    # where it led, so the graph stays one path.
    displaced = next(
        (c for c in connections if c["from"] == after and c["type"] == new.connection_type), None
    )
    if displaced is not None:
        if "default" not in BY_PUBLIC_NAME[kind].edges:
            raise ValidationError(
                f"`{after}` already has a {new.connection_type!r} connection (to "
                f"`{displaced['to']}`), which a {kind} step cannot continue; "
                "choose another `after` or `connection_type`."
            )
        connections.remove(displaced)
        connections.append({"from": key, "to": displaced["to"], "type": "default"})
    connections.append({"from": after, "to": key, "type": new.connection_type})
    steps.append({"key": key, "type": kind, "config": _public_config(kind, new.config)})
    stored = await _store(session, clock, automation, steps, connections, graph)
    return stored.step(key)


async def update_step(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    automation_id: str,
    step_ref: str,
    changes: dict[str, Any],
) -> Step:
    """Apply ``key`` (connections follow the rename), ``type`` and ``config`` (replaced
    whole); the step keeps its id."""
    automation, graph = await _open(session, team_id, automation_id)
    step = find_step(graph, step_ref)
    _editable(automation)
    public = VOCABULARY.public_view(graph)
    current = next(item for item in public["steps"] if item["key"] == step.key)
    taken = {item["key"] for item in public["steps"]} - {step.key}
    key = _key(changes["key"], taken) if "key" in changes else step.key
    kind = _kind(changes["type"]) if "type" in changes else current["type"]
    config = _public_config(kind, changes["config"]) if "config" in changes else current["config"]
    steps = [
        {"key": key, "type": kind, "config": config} if item["key"] == step.key else item
        for item in public["steps"]
    ]
    connections = [
        {
            "from": key if link["from"] == step.key else link["from"],
            "to": key if link["to"] == step.key else link["to"],
            "type": link["type"],
        }
        for link in public["connections"]
    ]
    # The previous graph under the new key, so that the step keeps its id.
    previous = Graph(
        graph.trigger,
        tuple(replace(item, key=key) if item.id == step.id else item for item in graph.steps),
        graph.connections,
    )
    stored = await _store(session, clock, automation, steps, connections, previous)
    return stored.step(key)


async def delete_step(
    session: AsyncSession, clock: Clock, team_id: str, automation_id: str, step_ref: str
) -> str:
    automation, graph = await _open(session, team_id, automation_id)
    step = find_step(graph, step_ref)
    _editable(automation)
    public = VOCABULARY.public_view(graph)
    links = public["connections"]
    incoming = [link for link in links if link["to"] == step.key]
    outgoing = [link for link in links if link["from"] == step.key]
    connections = [link for link in links if step.key not in (link["from"], link["to"])]
    if len(incoming) == 1 and len(outgoing) == 1 and outgoing[0]["type"] == "default":
        connections.append(
            {"from": incoming[0]["from"], "to": outgoing[0]["to"], "type": incoming[0]["type"]}
        )
    steps = [item for item in public["steps"] if item["key"] != step.key]
    await _store(session, clock, automation, steps, connections, graph)
    return step.id
