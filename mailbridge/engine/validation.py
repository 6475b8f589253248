"""Checking a public graph with networkx and storing it in the stored vocabulary.

:func:`build` checks every rule of DESIGN §4 and reports *all* problems at once, each
with the key of the step it is about: exactly one trigger; unique keys; at most 150
steps; known types with valid configs (published templates, existing segments,
durations up to 30 days); connections between existing keys, of a type the source
step allows, at most one of a type out of a step, none into the trigger or out of a
terminal step; no cycles; every step reachable from the trigger.

What is known is the :class:`~mailbridge.engine.vocabulary.Vocabulary`'s: its step types,
its connection types, and for each kind the ``edges`` that may leave it (the trigger:
``default``; a kind with none is terminal). Nothing about step or connection types is
fixed here, so a kind an embedding program adds brings its own edges.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from mailbridge.engine.graph import (
    MAX_STEPS,
    TRIGGER_EDGES,
    Connection,
    Graph,
    Step,
    Trigger,
)
from mailbridge.engine.ports import References
from mailbridge.engine.vocabulary import Vocabulary


@dataclass(frozen=True)
class Problem:
    key: str | None  # the step it is about; None for the graph as a whole
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}" if self.key else self.message


class GraphInvalid(ValueError):
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class _Parsed:
    trigger: Trigger | None
    trigger_keys: list[str]
    steps: list[tuple[str, str, Mapping[str, Any], str | None]]  # key, type, config, id
    connections: list[Connection]


def _parse_steps(vocabulary: Vocabulary, raw: object, problems: list[Problem]) -> _Parsed:
    parsed = _Parsed(None, [], [], [])
    if not isinstance(raw, list) or not raw:
        problems.append(Problem(None, "`steps` must be a list holding a trigger step"))
        return parsed
    triggers = 0
    seen: set[str] = set()
    for index, item in enumerate(raw):
        key = item.get("key") if isinstance(item, dict) else None
        if not isinstance(key, str) or not 1 <= len(key) <= 100:
            problems.append(Problem(f"steps[{index}]", "every step needs a `key` (1-100 chars)"))
            continue
        assert isinstance(item, dict)
        if key in seen:
            problems.append(Problem(key, "this key is used by more than one step"))
            continue
        seen.add(key)
        kind, config = item.get("type"), item.get("config")
        config = {} if config is None else config
        if not isinstance(config, dict):
            problems.append(Problem(key, "`config` must be an object"))
            continue
        if kind == "trigger":
            triggers += 1
            parsed.trigger_keys.append(key)
            event_name = config.get("event_name")
            if not isinstance(event_name, str) or not event_name.strip():
                problems.append(Problem(key, "config.event_name: the trigger needs an event name"))
            elif parsed.trigger is None:
                domain = config.get("domain")
                parsed.trigger = Trigger(key, event_name.strip(), domain)
        elif kind in vocabulary.by_public:
            step_id = item.get("id")
            parsed.steps.append((key, kind, config, step_id if isinstance(step_id, str) else None))
        else:
            known = ", ".join(vocabulary.step_types)
            problems.append(Problem(key, f"unknown step type {kind!r} (one of {known})"))
    if triggers != 1:
        problems.append(Problem(None, f"a graph has exactly one trigger step, not {triggers}"))
    if len(parsed.steps) > MAX_STEPS:
        problems.append(Problem(None, f"at most {MAX_STEPS} steps, not {len(parsed.steps)}"))
    return parsed


def _parse_connections(
    vocabulary: Vocabulary, raw: object, keys: set[str], problems: list[Problem]
) -> list[Connection]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(Problem(None, "`connections` must be a list"))
        return []
    connections = []
    for index, item in enumerate(raw):
        source = item.get("from") if isinstance(item, dict) else None
        target = item.get("to") if isinstance(item, dict) else None
        kind = item.get("type", "default") if isinstance(item, dict) else None
        if not isinstance(source, str) or not isinstance(target, str):
            problems.append(Problem(f"connections[{index}]", "needs `from` and `to` step keys"))
            continue
        if kind not in vocabulary.connection_types:
            known = vocabulary.connection_types
            problems.append(Problem(source, f"connection type {kind!r} is not one of {known}"))
            continue
        missing = [key for key in (source, target) if key not in keys]
        if missing:
            problems.append(
                Problem(source, f"connection to or from unknown step {', '.join(missing)}")
            )
            continue
        connections.append(Connection(source, target, str(kind)))
    return connections


def _check_edges(vocabulary: Vocabulary, parsed: _Parsed, problems: list[Problem]) -> None:
    assert parsed.trigger is not None
    allowed = {key: vocabulary.by_public[kind].edges for key, kind, _, _ in parsed.steps}
    for key in parsed.trigger_keys:  # a second trigger is reported already; do not crash on it
        allowed[key] = TRIGGER_EDGES
    seen: set[tuple[str, str]] = set()
    for connection in parsed.connections:
        source = connection.source
        if connection.target == parsed.trigger.key:
            problems.append(Problem(source, "nothing may connect into the trigger"))
        if not allowed[source]:
            problems.append(Problem(source, "this step ends the run: no connection may leave it"))
        elif connection.type not in allowed[source]:
            kinds = ", ".join(sorted(allowed[source]))
            problems.append(
                Problem(source, f"a {connection.type!r} connection cannot leave it (only {kinds})")
            )
        if (source, connection.type) in seen:
            problems.append(Problem(source, f"more than one {connection.type!r} connection"))
        seen.add((source, connection.type))


def _check_shape(parsed: _Parsed, problems: list[Problem]) -> None:
    assert parsed.trigger is not None
    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_node(parsed.trigger.key)
    graph.add_nodes_from(key for key, _, _, _ in parsed.steps)
    graph.add_edges_from((c.source, c.target) for c in parsed.connections)
    for cycle in list(nx.simple_cycles(graph))[:5]:
        path = " -> ".join([*cycle, cycle[0]])
        problems.append(Problem(cycle[0], f"connections form a cycle ({path})"))
    reachable = nx.descendants(graph, parsed.trigger.key)
    for key, _, _, _ in parsed.steps:
        if key not in reachable:
            problems.append(Problem(key, "not reachable from the trigger"))


def build(
    vocabulary: Vocabulary,
    steps: object,
    connections: object,
    references: References,
    *,
    previous: Graph | None = None,
    new_id: Callable[[], str] = _new_id,
) -> Graph:
    """The stored-vocabulary graph of a public ``steps`` + ``connections`` (step and
    connection types from ``vocabulary``), or :class:`GraphInvalid` naming every problem.
    Steps keep the ids they had in ``previous`` (matched by key)."""
    problems: list[Problem] = []
    parsed = _parse_steps(vocabulary, steps, problems)
    keys = {key for key, _, _, _ in parsed.steps} | set(parsed.trigger_keys)
    parsed.connections = _parse_connections(vocabulary, connections, keys, problems)
    for key, kind, config, _ in parsed.steps:
        problems.extend(
            Problem(key, message)
            for message in vocabulary.by_public[kind].check(config, references)
        )
    if parsed.trigger is not None:
        _check_edges(vocabulary, parsed, problems)
        _check_shape(parsed, problems)
    if problems:
        raise GraphInvalid(problems)
    assert parsed.trigger is not None
    kept = {step.key: step.id for step in previous} if previous is not None else {}
    stored = tuple(
        Step(
            kept.get(key) or new_id(),
            key,
            vocabulary.by_public[kind].stored_name,
            position,
            vocabulary.by_public[kind].to_stored(config, references),
        )
        for position, (key, kind, config, _) in enumerate(parsed.steps)
    )
    return Graph(parsed.trigger, stored, tuple(parsed.connections))
