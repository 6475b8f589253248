"""Writing an automation's graph: check a public graph, keep it as a new version.

Every change of steps or connections — the automation's PATCH and the step routes —
goes through :func:`check_graph` (the engine's :func:`~mailbridge.engine.validation.build`
with references read from the database) and :func:`add_version`. Versions are
append-only: a run keeps reading the version it started on. Writers lock the
automation row first (:func:`lock_automation`), so two concurrent edits cannot both
make version n+1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.engine.graph import Graph
from mailbridge.engine.validation import GraphInvalid, Problem, build
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.automations._references import load_references
from mailbridge.steps import VOCABULARY
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Automation, AutomationVersion

DISABLE_FIRST = (
    "Disable the automation first (POST /automations/:id/stop or PATCH status disabled)."
)
MAX_EVENT_NAME = 200
TRIGGER_KEY = "trigger"


def graph_error(problems: Sequence[Problem]) -> ValidationError:
    """One 422 naming every problem; ``errors`` lists them for programs."""
    listed = "; ".join(str(problem) for problem in problems)
    return ValidationError(
        f"The automation is not valid: {listed}",
        extra={"errors": [{"key": p.key, "message": p.message} for p in problems]},
    )


def _free_key(steps: list[Any], wanted: str) -> str:
    taken = {step.get("key") for step in steps if isinstance(step, dict)}
    key, n = wanted, 1
    while key in taken:
        n += 1
        key = f"{wanted}_{n}"
    return key


def with_trigger(steps: object, trigger: str | None, domain: str) -> tuple[object, list[Problem]]:
    """Raw public ``steps`` with their trigger step completed (never mutating the input).

    Without a trigger step, ``trigger`` (an event name) adds one first. The trigger's
    ``domain`` is the automation's: filled in when absent, refused when another.
    """
    if not isinstance(steps, list):
        if steps is not None or trigger is None:
            return steps, []
        steps = []
    problems: list[Problem] = []
    completed: list[Any] = []
    has_trigger = False
    for item in steps:
        if not (isinstance(item, dict) and item.get("type") == "trigger"):
            completed.append(item)
            continue
        has_trigger = True
        raw_config = item.get("config")
        config = dict(raw_config) if isinstance(raw_config, dict) else {}
        key = str(item.get("key"))
        given_domain = config.get("domain")
        if given_domain is None or (
            isinstance(given_domain, str) and given_domain.strip().lower() == domain
        ):
            config["domain"] = domain
        else:
            problems.append(
                Problem(key, f"config.domain: the trigger's domain is the automation's ({domain})")
            )
        event_name = config.get("event_name")
        if isinstance(event_name, str) and len(event_name.strip()) > MAX_EVENT_NAME:
            problems.append(Problem(key, f"config.event_name: at most {MAX_EVENT_NAME} characters"))
        if trigger is not None and isinstance(event_name, str) and event_name.strip() != trigger:
            problems.append(
                Problem(key, f"config.event_name {event_name!r} differs from `trigger` {trigger!r}")
            )
        completed.append({**item, "config": config})
    if not has_trigger and trigger is not None:
        if len(trigger.strip()) > MAX_EVENT_NAME:
            problems.append(Problem(None, f"`trigger`: at most {MAX_EVENT_NAME} characters"))
        step = {
            "key": _free_key(completed, TRIGGER_KEY),
            "type": "trigger",
            "config": {"event_name": trigger, "domain": domain},
        }
        completed.insert(0, step)
    return completed, problems


def renamed_trigger(steps: Iterable[dict[str, Any]], event_name: str) -> list[dict[str, Any]]:
    """Public steps whose trigger listens to ``event_name`` instead."""
    return [
        {**step, "config": {**step["config"], "event_name": event_name}}
        if step["type"] == "trigger"
        else step
        for step in steps
    ]


async def check_graph(
    session: AsyncSession,
    team_id: str,
    domain: str,
    steps: object,
    connections: object,
    *,
    previous: Graph | None = None,
    problems: Iterable[Problem] = (),
) -> Graph:
    """The stored graph of a public one, or a 422 naming every problem (``problems``
    found by the caller first)."""
    found = list(problems)
    references = await load_references(session, team_id, domain, steps)
    graph: Graph | None = None
    try:
        graph = build(VOCABULARY, steps, connections, references, previous=previous)
    except GraphInvalid as invalid:
        found.extend(invalid.problems)
    if found:
        raise graph_error(found)
    assert graph is not None
    return graph


async def recheck(session: AsyncSession, automation: Automation, graph: Graph) -> None:
    """Check a stored graph again (before enabling): templates still published, segments
    still there."""
    public = VOCABULARY.public_view(graph)
    await check_graph(
        session, automation.team_id, automation.domain, public["steps"], public["connections"],
        previous=graph,
    )  # fmt: skip


async def lock_automation(session: AsyncSession, team_id: str, automation_id: str) -> Automation:
    """The team's automation, locked for this transaction (404 otherwise).

    The no-op UPDATE takes the row lock on PostgreSQL and the write lock on SQLite, so
    the reads that follow are inside it."""
    if not is_uuid(automation_id):
        raise NotFound("Automation not found.")
    result = await session.execute(
        update(Automation)
        .where(Automation.id == automation_id, Automation.team_id == team_id)
        .values(version=Automation.version),
        execution_options={"synchronize_session": False},
    )
    row = None
    if getattr(result, "rowcount", 0):
        row = await session.scalar(select(Automation).where(Automation.id == automation_id))
    if row is None:
        raise NotFound("Automation not found.")
    return row


async def graph_of(session: AsyncSession, automation: Automation) -> Graph:
    """The automation's current graph (stored vocabulary)."""
    row = await session.get(AutomationVersion, (automation.id, automation.version))
    assert row is not None, f"automation {automation.id} lost version {automation.version}"
    return Graph.from_dict(row.graph)


def add_version(session: AsyncSession, clock: Clock, automation: Automation, graph: Graph) -> None:
    """Make ``graph`` the automation's next version (version 1 for a new automation,
    whose ``version`` is 0 until then)."""
    now = clock.now()
    automation.version = (automation.version or 0) + 1
    automation.trigger_event = graph.trigger.event_name
    automation.trigger_key = graph.trigger.key
    automation.updated_at = now
    session.add(
        AutomationVersion(
            automation_id=automation.id,
            version=automation.version,
            graph=graph.as_dict(),
            created_at=now,
        )
    )
