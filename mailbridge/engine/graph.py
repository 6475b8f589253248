"""Automation graphs in both vocabularies (spec §2.2).

The *public* vocabulary is what create, retrieve and update speak: a trigger step
``{key, type: "trigger", config: {event_name, domain}}``, executable steps
``{id, key, type, position, config}`` and connections ``{from, to, type}``. The
*stored* vocabulary is what a version keeps and the step routes answer (``send``,
``wait``, flattened send config); :mod:`mailbridge.engine.vocabulary` converts.

Both are plain frozen dataclasses: the engine reads graphs far more often than it
builds them, and a stored graph is shared by every run on its version. Which step types
and connection types a graph may use is not fixed here: the
:class:`~mailbridge.engine.vocabulary.Vocabulary` the engine is handed says (each step
kind brings the connection types that may leave it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_STEPS = 150
TRIGGER_EDGES = frozenset({"default"})  # what may leave the trigger, whatever the vocabulary


@dataclass(frozen=True)
class Trigger:
    key: str
    event_name: str
    domain: str | None = None

    def public(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": "trigger",
            "config": {"event_name": self.event_name, "domain": self.domain},
        }


@dataclass(frozen=True)
class Step:
    """An executable step; ``type`` and ``config`` are in the graph's vocabulary."""

    id: str
    key: str
    type: str
    position: int
    config: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "type": self.type,
            "position": self.position,
            "config": dict(self.config),
        }


@dataclass(frozen=True)
class Connection:
    source: str
    target: str
    type: str = "default"

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "type": self.type}


@dataclass(frozen=True)
class Graph:
    trigger: Trigger
    steps: tuple[Step, ...]
    connections: tuple[Connection, ...]
    # next step key by (step key, connection type), built once
    _routes: dict[tuple[str, str], str] = field(default_factory=dict, compare=False, repr=False)
    _by_key: dict[str, Step] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for connection in self.connections:
            self._routes.setdefault((connection.source, connection.type), connection.target)
        for step in self.steps:
            self._by_key.setdefault(step.key, step)

    def step(self, key: str) -> Step:
        return self._by_key[key]

    def has_step(self, key: str) -> bool:
        return key in self._by_key

    def next_key(self, key: str, via: str = "default") -> str | None:
        return self._routes.get((key, via))

    @property
    def first_key(self) -> str | None:
        return self.next_key(self.trigger.key)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def as_dict(self) -> dict[str, Any]:
        """The serialized form (either vocabulary): trigger first, then steps in order."""
        return {
            "trigger_key": self.trigger.key,
            "steps": [self.trigger.public(), *(step.as_dict() for step in self.steps)],
            "connections": [connection.as_dict() for connection in self.connections],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Graph:
        """Read :meth:`as_dict` output back (trusted input: a stored version)."""
        trigger: Trigger | None = None
        steps: list[Step] = []
        for item in data["steps"]:
            if item["type"] == "trigger":
                config = item.get("config") or {}
                trigger = Trigger(item["key"], config["event_name"], config.get("domain"))
            else:
                steps.append(
                    Step(item["id"], item["key"], item["type"], item["position"], item["config"])
                )
        if trigger is None:
            raise ValueError("a stored graph has a trigger step")
        connections = tuple(
            Connection(c["from"], c["to"], c.get("type", "default")) for c in data["connections"]
        )
        return cls(trigger, tuple(steps), connections)
