"""Built-in triggers: what mailbridge records (``contact.created``, ``email.opened``, ...)
starts and resumes runs.

Every change is an activity row, written with the change; the activity dispatcher hands
each batch, once, to its consumers, inside one transaction — among them the automations
context's ``BuiltInTriggers``, which opens the engine's transaction on the dispatcher's
session and calls this module:

- :class:`ListenedNames` — the ``(team, event name)`` pairs some enabled automation
  listens for: its trigger, or a wait step of any of its versions (a run on an older
  version may still wait). Only activity of those types costs the engine a lookup. The
  set is loaded through the :class:`Listeners` port and kept for a couple of seconds.
- :func:`events_of` — the engine events an activity row stands for, one per contact it
  is about. Run events (``automation.*``) stand for none, so an automation cannot feed
  itself.
- :func:`emit_activity` — those events into ``Engine.emit_in``, in the caller's
  transaction; a team past its run quota starts nothing and is logged (a built-in event
  has no caller to answer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from mailbridge.engine.engine import Engine
from mailbridge.engine.graph import Graph
from mailbridge.engine.ports import Event, RunQuotaExceeded, Transaction

logger = logging.getLogger(__name__)

NAMES_TTL = 2.0  # seconds a loaded ListenedNames serves
# The stored name of wait_for_event (``mailbridge.steps.wait_for_event``): the step that
# parks a run until an event. Named, not imported: triggers and steps are siblings.
WAIT_STEP = "wait"


class Activity(Protocol):
    """An activity row as the triggers read it (``storage.tables.ActivityEvent``)."""

    @property
    def team_id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def data(self) -> Mapping[str, Any] | None: ...


A = TypeVar("A", bound=Activity)


def events_of(activity: Activity) -> Iterator[Event]:
    """The engine events an activity row stands for: one per contact it is about."""
    data: dict[str, Any] = dict(activity.data or {})
    team_id, name = activity.team_id, activity.type
    if name.startswith("contact."):
        yield Event(team_id, name, contact_id=data.get("id"), payload=data)
    elif name.startswith("email."):
        for address in data.get("to") or []:
            yield Event(team_id, name, email=str(address).lower(), payload=data)
    elif name.startswith("inbox."):
        # A conversation is about its correspondent: who wrote in, or whom the inbox wrote to.
        if name == "inbox.email.sent":
            for address in data.get("to") or []:
                yield Event(team_id, name, email=_bare(str(address)), payload=data)
        elif name in ("inbox.email.received", "inbox.thread.created") and data.get("from"):
            # Not inbox.thread.updated nor inbox.draft.sent: what a step does to a
            # thread must not start the automation that did it again.
            yield Event(team_id, name, email=_bare(str(data["from"])), payload=data)
    elif name.startswith("poll."):
        # A vote is about its contact, or about the address the mail went to.
        if data.get("contact_id"):
            yield Event(team_id, name, contact_id=str(data["contact_id"]), payload=data)
        elif data.get("email"):
            yield Event(team_id, name, email=str(data["email"]), payload=data)


def _bare(address: str) -> str:
    """``Name <a@b>`` or ``a@b`` → ``a@b``, lower-case."""
    inside = address.rpartition("<")[2].partition(">")[0] if "<" in address else address
    return inside.strip().lower()


@dataclass(frozen=True)
class Listener:
    """An enabled automation, as much as built-in triggers need of it."""

    team_id: str
    trigger_event: str
    graphs: tuple[Graph, ...]  # of every version (stored vocabulary)


class Listeners(Protocol):
    """Where :class:`ListenedNames` loads from (the automations context: its tables)."""

    async def enabled(self) -> Iterable[Listener]:
        """Every enabled automation of every team."""
        ...


def listened_names(listeners: Iterable[Listener]) -> set[tuple[str, str]]:
    """The ``(team, event name)`` pairs that may start or resume a run of ``listeners``."""
    names: set[tuple[str, str]] = set()
    for listener in listeners:
        names.add((listener.team_id, listener.trigger_event))
        for graph in listener.graphs:
            names.update(
                (listener.team_id, str(step.config["event_name"]))
                for step in graph.steps
                if step.type == WAIT_STEP
            )
    return names


class ListenedNames:
    """:func:`listened_names` of the enabled automations, reloaded after ``ttl`` seconds
    (so an automation enabled a moment ago may miss built-in events for that long)."""

    def __init__(
        self, ttl: float = NAMES_TTL, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl, self._monotonic = ttl, monotonic
        self._names: set[tuple[str, str]] = set()
        self._loaded_at: float | None = None

    async def load(self, listeners: Listeners) -> set[tuple[str, str]]:
        if self._loaded_at is None or self._monotonic() - self._loaded_at > self._ttl:
            self._names = listened_names(await listeners.enabled())
            self._loaded_at = self._monotonic()
        return self._names

    async def wanted(self, listeners: Listeners, activity: Sequence[A]) -> list[A]:
        """The rows of ``activity`` some enabled automation listens for, in order."""
        names = await self.load(listeners)
        return [row for row in activity if (row.team_id, row.type) in names]


async def emit_activity(engine: Engine, tx: Transaction, activity: Activity) -> bool:
    """Start and resume the runs one activity row stands for, in ``tx`` (the caller
    commits); whether some run was started or resumed."""
    touched = False
    for event in events_of(activity):
        try:
            emitted = await engine.emit_in(tx, event)
        except RunQuotaExceeded:
            logger.warning("team %s: automation run quota used up", event.team_id)
            continue
        touched = touched or bool(emitted.started or emitted.resumed)
    return touched
