"""mailbridge.triggers over the engine's in-memory ports: which activity is worth a
lookup, what it starts and resumes, and the rules of custom-event intake (no I/O)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from mailbridge.clock import FakeClock
from mailbridge.engine import Engine, Event, Graph, MemoryBackend, MemoryReferences, build
from mailbridge.errors import AutomationQuotaExceeded, ValidationError
from mailbridge.steps import VOCABULARY
from mailbridge.steps.wait_for_event import WaitForEvent
from mailbridge.triggers import (
    BUILT_IN_PREFIXES,
    ListenedNames,
    Listener,
    custom_event_name,
    emit_activity,
    emit_custom_event,
)
from mailbridge.triggers.activity import WAIT_STEP, listened_names

TEAM = "acme"


def graph(
    trigger: str, steps: Sequence[dict[str, Any]] = (), connections: Sequence[object] = ()
) -> Graph:
    trigger_step = {"key": "start", "type": "trigger", "config": {"event_name": trigger}}
    return build(VOCABULARY, [trigger_step, *steps], list(connections), MemoryReferences())


# Started by a new contact; goes on when the contact clicks a link.
WAITS_FOR_A_CLICK = graph(
    "contact.created",
    [
        {"key": "clicked", "type": "wait_for_event", "config": {"event_name": "email.clicked"}},
        {"key": "tag", "type": "contact_update", "config": {"properties": {"clicked": True}}},
    ],
    [
        {"from": "start", "to": "clicked"},
        {"from": "clicked", "to": "tag", "type": "event_received"},
    ],
)


@dataclass
class Row:
    """An activity row, as the triggers read it."""

    type: str
    data: Mapping[str, Any] | None
    team_id: str = TEAM


@dataclass
class Listeners:
    listeners: list[Listener]
    loads: int = 0

    async def enabled(self) -> Iterable[Listener]:
        self.loads += 1
        return list(self.listeners)


@dataclass
class Monotonic:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


# -- which activity is worth a lookup --------------------------------------------------


def test_a_trigger_and_the_waits_of_every_version_are_listened_for() -> None:
    old = graph(
        "contact.created",
        [{"key": "d", "type": "delay", "config": {"duration": 60}}],
        [{"from": "start", "to": "d"}],
    )
    listeners = [
        Listener(TEAM, "contact.created", (old, WAITS_FOR_A_CLICK)),
        Listener("other", "email.opened", ()),
    ]
    assert listened_names(listeners) == {
        (TEAM, "contact.created"),
        (TEAM, "email.clicked"),
        ("other", "email.opened"),
    }
    assert WaitForEvent.stored_name == WAIT_STEP  # the name triggers look for


async def test_listened_names_are_kept_for_their_ttl() -> None:
    clock = Monotonic()
    names = ListenedNames(2.0, monotonic=clock)
    source = Listeners([Listener(TEAM, "contact.created", ())])
    rows = [Row("contact.created", {}), Row("email.opened", {}), Row("contact.created", {})]

    assert await names.wanted(source, rows) == [rows[0], rows[2]]
    source.listeners.append(Listener(TEAM, "email.opened", ()))
    clock.now += 2.0
    assert await names.wanted(source, rows) == [rows[0], rows[2]]  # still the loaded set
    assert source.loads == 1
    clock.now += 0.5
    assert await names.wanted(source, rows) == rows
    assert source.loads == 2


# -- what built-in activity starts and resumes -----------------------------------------


@dataclass
class World:
    backend: MemoryBackend = field(default_factory=MemoryBackend)
    clock: FakeClock = field(default_factory=FakeClock)

    @property
    def engine(self) -> Engine:
        return Engine(self.backend, self.clock, VOCABULARY)

    async def emit_activity(self, row: Row) -> bool:
        async with self.backend.transaction() as tx:
            touched = await emit_activity(self.engine, tx, row)
            await tx.commit()
        return touched


async def test_activity_starts_and_resumes_runs() -> None:
    world = World()
    world.backend.add_automation(WAITS_FOR_A_CLICK, team_id=TEAM, audience_id="a", domain="acme.io")
    contact = world.backend.contacts.add(TEAM, "a", "ann@corp.io")

    assert await world.emit_activity(Row("contact.created", {"id": contact["id"]}))
    [run] = world.backend.runs.runs.values()
    await world.engine.run_due()  # parks on the wait
    assert not await world.emit_activity(Row("email.opened", {"to": ["ann@corp.io"]}))
    assert not await world.emit_activity(Row("automation.run.started", {"id": run.id}))
    assert await world.emit_activity(Row("email.clicked", {"to": ["Ann@Corp.io"]}))
    await world.engine.run_due()

    assert world.backend.runs.runs[run.id].status == "completed"
    assert world.backend.contacts.contacts[contact["id"]]["properties"] == {"clicked": True}


async def test_activity_past_the_run_quota_starts_nothing_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World(backend=MemoryBackend(run_quota=0))
    world.backend.add_automation(WAITS_FOR_A_CLICK, team_id=TEAM, audience_id="a", domain="acme.io")
    contact = world.backend.contacts.add(TEAM, "a", "ann@corp.io")

    with caplog.at_level(logging.WARNING, logger="mailbridge.triggers"):
        assert not await world.emit_activity(Row("contact.created", {"id": contact["id"]}))
    assert world.backend.runs.runs == {}
    assert f"team {TEAM}: automation run quota used up" in caplog.messages


# -- custom events ---------------------------------------------------------------------


@pytest.mark.parametrize("prefix", BUILT_IN_PREFIXES)
def test_built_in_names_are_refused(prefix: str) -> None:
    with pytest.raises(ValidationError) as refused:
        custom_event_name(f"  {prefix}anything ")
    assert refused.value.message == (
        f"`{prefix}anything` is a built-in event; mailbridge emits it itself."
    )


def test_a_custom_name_is_stripped() -> None:
    assert custom_event_name("\tuser.signed_up \n") == "user.signed_up"
    assert custom_event_name("emails.sent") == "emails.sent"  # a prefix is a whole word


@dataclass
class Checks:
    problems: list[str] = field(default_factory=list)
    contacts: set[str] = field(default_factory=set)
    asked: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    async def payload_problems(
        self, team_id: str, name: str, payload: Mapping[str, Any]
    ) -> list[str]:
        self.asked.append((team_id, name, dict(payload)))
        return self.problems

    async def contact_exists(self, team_id: str, contact_id: str) -> bool:
        return contact_id in self.contacts


async def emit_custom(world: World, checks: Checks, event: Event) -> list[str]:
    async with world.backend.transaction() as tx:
        emitted = await emit_custom_event(world.engine, tx, checks, event)
        await tx.commit()
    return emitted.started


async def test_a_custom_event_starts_runs_after_its_checks() -> None:
    world = World()
    world.backend.add_automation(
        graph("user.signed_up"), team_id=TEAM, audience_id="a", domain="acme.io"
    )
    checks = Checks()
    event = Event(TEAM, "user.signed_up", email="ann@corp.io", payload={"plan": "pro"})

    assert len(await emit_custom(world, checks, event)) == 1
    assert checks.asked == [(TEAM, "user.signed_up", {"plan": "pro"})]


async def test_a_custom_event_is_refused_whole() -> None:
    world = World(backend=MemoryBackend(run_quota=0))
    world.backend.add_automation(
        graph("user.signed_up"), team_id=TEAM, audience_id="a", domain="acme.io"
    )
    by_address = Event(TEAM, "user.signed_up", email="ann@corp.io")

    with pytest.raises(ValidationError) as refused:
        await emit_custom(world, Checks(problems=["unknown field x", "field y"]), by_address)
    assert refused.value.message == "payload: unknown field x; field y"
    with pytest.raises(ValidationError) as refused:
        await emit_custom(world, Checks(), Event(TEAM, "user.signed_up", contact_id="c-9"))
    assert refused.value.message == "No contact with id c-9."
    with pytest.raises(AutomationQuotaExceeded) as over:
        await emit_custom(world, Checks(), by_address)
    assert over.value.message == "the plan allows 0 runs on this plan; nothing was started."
    assert world.backend.runs.runs == {}
