"""The step kinds an engine knows, and the public <-> stored vocabulary of steps (spec
§2.2 "Stored step").

A :class:`Vocabulary` is the set of step kinds an engine knows (``mailbridge.steps``
builds the default one, ``VOCABULARY``; an embedding program may add kinds of its own,
see ``examples/custom_step.py``). Everything a graph may say comes from it: the step
types (:attr:`Vocabulary.step_types`), the connection types that may leave a step of
each (the kind's ``edges``) and so the connection types a graph may use at all
(:attr:`Vocabulary.connection_types`: ``default``, which leaves the trigger, and every
kind's edges).

It converts steps and graphs between the two vocabularies. Stored → public is pure.
Public → stored needs the published templates a send step names (their content is
snapshotted), so it goes through
:meth:`Vocabulary.step_to_stored` with :class:`~mailbridge.engine.ports.References`;
whole graphs are checked and converted by :func:`mailbridge.engine.validation.build`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mailbridge.engine.graph import TRIGGER_EDGES, Graph, Step
from mailbridge.engine.ports import References, StepKind


class Vocabulary:
    """The step kinds an engine knows, by their public and their stored names.

    ``edge_order`` only says how :attr:`connection_types` lists the connection types
    (messages name them in that order); the kinds say which there are. ``default`` comes
    first, then those ``edge_order`` names, then the others sorted; a name no kind
    declares is left out.
    """

    def __init__(self, kinds: Iterable[StepKind], *, edge_order: Sequence[str] = ()) -> None:
        self.kinds = tuple(kinds)
        self.by_public: dict[str, StepKind] = {}
        self.by_stored: dict[str, StepKind] = {}
        for kind in self.kinds:
            if kind.name == "trigger" or kind.name in self.by_public:
                raise ValueError(f"a step kind cannot be named {kind.name!r}: it is taken")
            if kind.stored_name in self.by_stored:
                raise ValueError(f"two step kinds are stored as {kind.stored_name!r}")
            self.by_public[kind.name] = kind
            self.by_stored[kind.stored_name] = kind
        self.step_types: tuple[str, ...] = tuple(self.by_public)
        declared = set(TRIGGER_EDGES).union(*(kind.edges for kind in self.kinds))
        first = [*sorted(TRIGGER_EDGES), *edge_order]
        listed = tuple(dict.fromkeys(name for name in first if name in declared))
        self.connection_types: tuple[str, ...] = listed + tuple(sorted(declared - set(listed)))

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
