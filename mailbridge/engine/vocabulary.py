"""The public <-> stored vocabulary of steps (spec §2.2 "Stored step").

Stored → public is pure. Public → stored needs the published templates a send step
names (their content is snapshotted), so it goes through :func:`step_to_stored` with
:class:`~mailbridge.engine.ports.References`; whole graphs are checked and converted
by :func:`mailbridge.engine.validation.build`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mailbridge import steps as step_kinds  # read at call time: the steps import the engine
from mailbridge.engine.graph import Graph, Step
from mailbridge.engine.ports import References


def public_type(stored_type: str) -> str:
    return step_kinds.BY_STORED_NAME[stored_type].name


def stored_type(public: str) -> str:
    return step_kinds.BY_PUBLIC_NAME[public].stored_name


def step_to_public(step: Step) -> Step:
    kind = step_kinds.BY_STORED_NAME[step.type]
    return Step(step.id, step.key, kind.name, step.position, kind.to_public(step.config))


def step_to_stored(step: Step, references: References) -> Step:
    kind = step_kinds.BY_PUBLIC_NAME[step.type]
    return Step(
        step.id, step.key, kind.stored_name, step.position, kind.to_stored(step.config, references)
    )


def graph_to_public(graph: Graph) -> Graph:
    return Graph(graph.trigger, tuple(map(step_to_public, graph.steps)), graph.connections)


def public_view(graph: Graph) -> dict[str, Any]:
    """``trigger_key``, ``steps`` and ``connections`` of spec §2.2 for a stored graph."""
    return graph_to_public(graph).as_dict()


def stored_view(step: Step) -> dict[str, Any]:
    """The stored step as the step routes answer it."""
    return step.as_dict()


def public_config(stored: Mapping[str, Any], stored_step_type: str) -> dict[str, Any]:
    return step_kinds.BY_STORED_NAME[stored_step_type].to_public(stored)
