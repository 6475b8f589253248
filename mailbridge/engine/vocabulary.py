"""The public <-> stored vocabulary of steps (spec §2.2 "Stored step").

A :class:`Vocabulary` is the set of step kinds an engine knows (``mailbridge.steps``
builds the default one, ``VOCABULARY``); it converts steps and graphs between the two
vocabularies. Stored → public is pure. Public → stored needs the published templates a
send step names (their content is snapshotted), so it goes through
:meth:`Vocabulary.step_to_stored` with :class:`~mailbridge.engine.ports.References`;
whole graphs are checked and converted by :func:`mailbridge.engine.validation.build`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mailbridge.engine.graph import Graph, Step
from mailbridge.engine.ports import References, StepKind


class Vocabulary:
    """The step kinds an engine knows, by their public and their stored names."""

    def __init__(self, kinds: Iterable[StepKind]) -> None:
        self.kinds = tuple(kinds)
        self.by_public: dict[str, StepKind] = {kind.name: kind for kind in self.kinds}
        self.by_stored: dict[str, StepKind] = {kind.stored_name: kind for kind in self.kinds}

    def public_type(self, stored_type: str) -> str:
        return self.by_stored[stored_type].name

    def stored_type(self, public: str) -> str:
        return self.by_public[public].stored_name

    def step_to_public(self, step: Step) -> Step:
        kind = self.by_stored[step.type]
        return Step(step.id, step.key, kind.name, step.position, kind.to_public(step.config))

    def step_to_stored(self, step: Step, references: References) -> Step:
        kind = self.by_public[step.type]
        config = kind.to_stored(step.config, references)
        return Step(step.id, step.key, kind.stored_name, step.position, config)

    def graph_to_public(self, graph: Graph) -> Graph:
        steps = tuple(map(self.step_to_public, graph.steps))
        return Graph(graph.trigger, steps, graph.connections)

    def public_view(self, graph: Graph) -> dict[str, Any]:
        """``trigger_key``, ``steps`` and ``connections`` of spec §2.2 for a stored graph."""
        return self.graph_to_public(graph).as_dict()

    def public_config(self, stored: Mapping[str, Any], stored_step_type: str) -> dict[str, Any]:
        return self.by_stored[stored_step_type].to_public(stored)


def stored_view(step: Step) -> dict[str, Any]:
    """The stored step as the step routes answer it."""
    return step.as_dict()
