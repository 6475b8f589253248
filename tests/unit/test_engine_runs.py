"""Runs through every step type and connection type, on MemoryBackend and a FakeClock."""

from __future__ import annotations

import copy
import itertools
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from mailbridge.clock import FakeClock
from mailbridge.engine import (
    Engine,
    Event,
    Graph,
    MemoryBackend,
    MemoryReferences,
    OutgoingEmail,
    Phase,
    Run,
    RunQuotaExceeded,
    RunStatus,
    StepRecord,
    StepStatus,
    TemplateContent,
    build,
)
from mailbridge.engine.memory import MemoryMailer
from mailbridge.engine.ports import SendRefused
from mailbridge.steps import VOCABULARY

TEAM, AUDIENCE, DOMAIN = "team-1", "aud-1", "acme.io"
TRIGGER_EVENT = "user.signed_up"
WELCOME = TemplateContent(
    "tpl-welcome", "Acme <hello@acme.io>", "Welcome {{{FIRST_NAME}}}", "<p>Hi</p>", "Hi",
    reply_to="help@acme.io",
)  # fmt: skip
FOLLOW_UP = TemplateContent("tpl-follow", "hello@acme.io", "Still there?", "<p>?</p>", None)
REFS = MemoryReferences(
    domain=DOMAIN, templates={t.id: t for t in (WELCOME, FOLLOW_UP)}, segments={"seg-vip"}
)
SEND_WELCOME = {"type": "send_email", "config": {"template": {"id": "tpl-welcome"}}}
SEND_FOLLOW_UP = {"type": "send_email", "config": {"template": {"id": "tpl-follow"}}}


def make_graph(steps: dict[str, dict[str, Any]], *connections: tuple[str, ...]) -> Graph:
    """A graph from ``{key: {type, config}}`` and ``(from, to[, type])`` tuples; the trigger
    ``start`` fires on TRIGGER_EVENT."""
    public = [{"key": "start", "type": "trigger", "config": {"event_name": TRIGGER_EVENT}}]
    public += [{"key": key, **body} for key, body in steps.items()]
    edges = [dict(zip(("from", "to", "type"), c, strict=False)) for c in connections]
    return build(VOCABULARY, public, edges, REFS)


def tag(value: str) -> dict[str, Any]:
    return {"type": "contact_update", "config": {"properties": {"branch": value}}}


class World:
    """The backend, clock and engine of one test, with short ways to look at them."""

    def __init__(self, backend: MemoryBackend | None = None) -> None:
        self.backend = backend or MemoryBackend()
        self.backend.add_segment("seg-vip")
        self.clock = FakeClock()
        counter = itertools.count(1)
        self.engine = Engine(
            self.backend,
            self.clock,
            VOCABULARY,
            new_run_id=lambda: str(uuid.UUID(int=next(counter))),
        )

    def add(self, graph: Graph, **options: Any) -> str:
        return self.backend.add_automation(
            graph, team_id=TEAM, audience_id=AUDIENCE, domain=DOMAIN, **options
        ).id

    def contact(self, email: str = "ada@example.com", **fields: Any) -> dict[str, Any]:
        return self.backend.contacts.add(TEAM, AUDIENCE, email, **fields)

    async def emit(
        self, name: str = TRIGGER_EVENT, email: str | None = "ada@example.com", **payload: Any
    ) -> tuple[list[str], list[str]]:
        emitted = await self.engine.emit(Event(TEAM, name, email=email, payload=payload))
        return emitted.started, emitted.resumed

    async def start(self, email: str = "ada@example.com", **payload: Any) -> str:
        started, _ = await self.emit(email=email, **payload)
        assert len(started) == 1
        return started[0]

    def run(self, run_id: str) -> Run:
        return self.backend.runs.runs[run_id]

    def records(self, run_id: str) -> dict[str, StepRecord]:
        return {r.step_key: r for r in self.backend.runs.steps_of(run_id)}

    def emails(self) -> list[OutgoingEmail]:
        return [sent.email for sent in self.backend.sent]

    def contact_by_email(self, email: str) -> dict[str, Any] | None:
        found = [c for c in self.backend.contacts.contacts.values() if c["email"] == email]
        return found[0] if found else None

    def later(self, **delta: float) -> datetime:
        return self.clock.advance(timedelta(**delta))


@pytest.fixture
def world() -> World:
    return World()


# -- send_email --------------------------------------------------------------------------


async def test_a_trigger_starts_a_run_that_sends_and_completes(world: World) -> None:
    send = {
        "type": "send_email",
        "config": {
            "template": {"id": "tpl-welcome"},
            "variables": {"PLAN": {"var": "event.plan"}, "SOURCE": "signup"},
        },
    }
    automation = world.add(make_graph({"welcome": send}, ("start", "welcome")))
    run_id = await world.start(plan="pro")
    run = world.run(run_id)
    assert (run.status, run.phase, run.step_key, run.version) == (
        RunStatus.RUNNING, Phase.READY, "welcome", 1,
    )  # fmt: skip
    assert run.context == {"event_name": TRIGGER_EVENT, "event": {"plan": "pro"}}
    assert world.emails() == []  # nothing happens until the due run is advanced

    progress = await world.engine.run_due()
    assert (progress.runs, progress.steps) == (1, 1)
    [email] = world.emails()
    contact = world.contact_by_email("ada@example.com")
    assert contact is not None and contact["audience_id"] == AUDIENCE
    assert email.to == "ada@example.com"
    assert email.from_address == "Acme <hello@acme.io>"
    assert email.subject == "Welcome {{{FIRST_NAME}}}"
    assert (email.html, email.text, email.reply_to) == ("<p>Hi</p>", "Hi", "help@acme.io")
    assert (email.template_id, email.domain, email.team_id) == ("tpl-welcome", DOMAIN, TEAM)
    assert (email.automation_id, email.run_id) == (automation, run_id)
    assert email.variables == {"PLAN": "pro", "SOURCE": "signup"}
    assert email.contact["id"] == contact["id"]
    run = world.run(run_id)
    assert (run.status, run.phase, run.due_at) == (RunStatus.COMPLETED, Phase.DONE, None)
    assert run.completed_at == world.clock.now()
    record = world.records(run_id)["welcome"]
    assert (record.status, record.type) == (StepStatus.COMPLETED, "send_email")
    assert record.output == {"email_id": world.backend.sent[0].id}


async def test_a_send_step_sends_once_per_run_even_when_advanced_again(world: World) -> None:
    world.add(make_graph({"welcome": SEND_WELCOME}, ("start", "welcome")))
    run_id = await world.start()
    stale = copy.deepcopy(world.run(run_id))  # as a second runner holding an old copy would
    await world.engine.run_due()
    first = world.records(run_id)["welcome"].output

    steps = await world.engine.advance(world.backend, stale, world.clock.now())
    assert steps == 1
    assert len(world.emails()) == 1
    assert world.records(run_id)["welcome"].output == first
    assert (await world.engine.run_due()).runs == 0
    assert len(world.emails()) == 1


async def test_an_unsubscribed_contact_is_skipped_and_the_run_goes_on(world: World) -> None:
    world.add(
        make_graph(
            {"welcome": SEND_WELCOME, "mark": tag("after")},
            ("start", "welcome"),
            ("welcome", "mark"),
        )
    )
    contact = world.contact(unsubscribed=True)
    run_id = await world.start()
    await world.engine.run_due()
    assert world.emails() == []
    records = world.records(run_id)
    assert records["welcome"].status is StepStatus.SKIPPED
    assert records["welcome"].output == {"reason": "unsubscribed"}
    assert records["mark"].status is StepStatus.COMPLETED
    assert world.backend.contacts.contacts[contact["id"]]["properties"] == {"branch": "after"}
    assert world.run(run_id).status is RunStatus.COMPLETED


class RefusingMailer(MemoryMailer):
    def __init__(self, refusals: list[SendRefused]) -> None:
        super().__init__()
        self.refusals = refusals

    async def send(self, email: OutgoingEmail) -> str:
        if self.refusals:
            raise self.refusals.pop(0)
        return await super().send(email)


async def test_a_refused_send_is_retried_when_the_mailer_says(world: World) -> None:
    retry_at = world.clock.now() + timedelta(hours=1)
    world.backend.mailer = RefusingMailer([SendRefused("daily quota", retry_at=retry_at)])
    world.add(make_graph({"welcome": SEND_WELCOME}, ("start", "welcome")))
    run_id = await world.start()
    await world.engine.run_due()
    run = world.run(run_id)
    assert (run.status, run.step_key, run.due_at) == (RunStatus.RUNNING, "welcome", retry_at)
    assert world.emails() == []
    world.later(minutes=59)
    assert (await world.engine.run_due()).runs == 0
    world.later(minutes=1)
    await world.engine.run_due()
    assert len(world.emails()) == 1
    assert world.run(run_id).status is RunStatus.COMPLETED


async def test_a_refused_send_is_skipped_or_fails_the_run(world: World) -> None:
    world.backend.mailer = RefusingMailer(
        [SendRefused("suppressed address", skip=True), SendRefused("domain unverified")]
    )
    world.add(make_graph({"welcome": SEND_WELCOME}, ("start", "welcome")))
    skipped, failed = await world.start("a@example.com"), await world.start("b@example.com")
    await world.engine.run_due()
    record = world.records(skipped)["welcome"]
    assert (record.status, record.output) == (StepStatus.SKIPPED, {"reason": "suppressed address"})
    assert world.run(skipped).status is RunStatus.COMPLETED
    record = world.records(failed)["welcome"]
    assert (record.status, record.error) == (StepStatus.FAILED, "domain unverified")
    assert world.run(failed).status is RunStatus.FAILED
    assert world.run(failed).error == "welcome: domain unverified"


# -- delay -------------------------------------------------------------------------------


async def test_a_delay_parks_the_run_until_it_is_due(world: World) -> None:
    world.add(
        make_graph(
            {
                "welcome": SEND_WELCOME,
                "nap": {"type": "delay", "config": {"duration": "3 days"}},
                "nudge": SEND_FOLLOW_UP,
            },
            ("start", "welcome"),
            ("welcome", "nap"),
            ("nap", "nudge"),
        )
    )
    run_id = await world.start()
    parked_at = world.clock.now()
    await world.engine.run_due()
    run = world.run(run_id)
    assert (run.phase, run.step_key, run.due_at) == (
        Phase.SLEEPING, "nap", parked_at + timedelta(days=3),
    )  # fmt: skip
    assert await world.backend.runs.next_due() == parked_at + timedelta(days=3)
    record = world.records(run_id)["nap"]
    assert (record.status, record.completed_at) == (StepStatus.RUNNING, None)
    assert record.output == {"seconds": 3 * 86400.0}

    world.later(days=3, seconds=-1)
    assert (await world.engine.run_due()).runs == 0
    assert [e.subject for e in world.emails()] == ["Welcome {{{FIRST_NAME}}}"]

    woke_at = world.later(seconds=1)
    assert (await world.engine.run_due()).steps == 1
    assert [e.subject for e in world.emails()] == ["Welcome {{{FIRST_NAME}}}", "Still there?"]
    record = world.records(run_id)["nap"]
    assert (record.status, record.started_at, record.completed_at) == (
        StepStatus.COMPLETED, parked_at, woke_at,
    )  # fmt: skip
    assert record.output == {"seconds": 3 * 86400.0}
    assert world.run(run_id).status is RunStatus.COMPLETED
    assert "parked_at" not in world.run(run_id).context


# -- wait_for_event ----------------------------------------------------------------------


def wait_graph(*, timeout_edge: bool = True, timeout: str | None = "2 days") -> Graph:
    config: dict[str, Any] = {
        "event_name": "user.paid",
        "filter_rule": {"type": "rule", "field": "event.amount", "operator": "gte", "value": 10},
    }
    if timeout is not None:
        config["timeout"] = timeout
    steps = {
        "wait": {"type": "wait_for_event", "config": config},
        "paid": {
            "type": "condition",
            "config": {"type": "rule", "field": "event.amount", "operator": "gt", "value": 100},
        },
        "big": tag("big spender"),
        "small": tag("small spender"),
        "late": tag("never paid"),
    }
    connections = [
        ("start", "wait"), ("wait", "paid", "event_received"),
        ("paid", "big", "condition_met"), ("paid", "small", "condition_not_met"),
    ]  # fmt: skip
    if timeout_edge:
        connections.append(("wait", "late", "timeout"))
    else:
        del steps["late"]
    return make_graph(steps, *connections)


def branch_of(world: World, email: str = "ada@example.com") -> Any:
    contact = world.contact_by_email(email)
    assert contact is not None
    return contact["properties"].get("branch")


async def test_a_wait_is_resumed_by_a_matching_event(world: World) -> None:
    world.add(wait_graph())
    run_id = await world.start(plan="free")
    await world.engine.run_due()
    run = world.run(run_id)
    assert (run.phase, run.waiting_event) == (Phase.WAITING, "user.paid")
    assert run.due_at == world.clock.now() + timedelta(days=2)

    assert await world.emit("user.paid", email="bob@example.com", amount=500) == ([], [])
    assert await world.emit("user.other", amount=500) == ([], [])
    assert await world.emit("user.paid", amount=5) == ([], [])  # filter_rule does not hold
    assert await world.emit("user.paid") == ([], [])  # nor with the field absent
    assert world.run(run_id).phase is Phase.WAITING
    assert world.run(run_id).waiting_event == "user.paid"

    world.later(hours=1)
    assert await world.emit("user.paid", amount=250) == ([], [run_id])
    assert await world.emit("user.paid", amount=300) == ([], [])  # taken already
    await world.engine.run_due()
    records = world.records(run_id)
    assert records["wait"].status is StepStatus.COMPLETED
    assert records["wait"].output == {"event": "user.paid", "payload": {"amount": 250}}
    # what follows reads the event that resumed the run
    assert records["paid"].output == {"met": True}
    assert branch_of(world) == "big spender"
    assert "late" not in records
    run = world.run(run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.context["event"] == {"amount": 250}


async def test_a_wait_times_out_along_the_timeout_connection(world: World) -> None:
    world.add(wait_graph())
    run_id = await world.start()
    await world.engine.run_due()
    world.later(days=2, seconds=-1)
    assert (await world.engine.run_due()).runs == 0
    world.later(seconds=1)
    await world.engine.run_due()
    records = world.records(run_id)
    assert records["wait"].status is StepStatus.TIMED_OUT
    assert records["wait"].completed_at == world.clock.now()
    assert branch_of(world) == "never paid"
    assert world.run(run_id).status is RunStatus.COMPLETED
    assert await world.emit("user.paid", amount=500) == ([], [])  # too late


async def test_a_wait_without_a_timeout_connection_ends_the_run(world: World) -> None:
    world.add(wait_graph(timeout_edge=False))
    run_id = await world.start()
    await world.engine.run_due()
    world.later(days=2)
    assert (await world.engine.run_due()).steps == 0
    run = world.run(run_id)
    assert (run.status, run.phase, run.step_key) == (RunStatus.COMPLETED, Phase.DONE, "wait")
    assert world.records(run_id)["wait"].status is StepStatus.TIMED_OUT
    assert branch_of(world) is None


async def test_a_wait_without_a_timeout_waits_for_ever(world: World) -> None:
    world.add(wait_graph(timeout=None))
    run_id = await world.start()
    await world.engine.run_due()
    assert world.run(run_id).due_at is None
    assert await world.backend.runs.next_due() is None
    world.later(days=60)
    assert (await world.engine.run_due()).runs == 0
    assert await world.emit("user.paid", amount=20) == ([], [run_id])
    await world.engine.run_due()
    assert branch_of(world) == "small spender"


# -- condition ---------------------------------------------------------------------------


def rule(field: str, operator: str, value: Any = None) -> dict[str, Any]:
    return {"type": "rule", "field": field, "operator": operator, "value": value}


EVENT: dict[str, Any] = {
    "plan": "pro",
    "seats": 5,
    "tags": ["beta", "eu"],
    "note": "",
    "ref": "utm-mail",
}
CONDITIONS = [
    (rule("event.plan", "eq", "pro"), True),
    (rule("event.plan", "eq", "free"), False),
    (rule("event.plan", "neq", "free"), True),
    (rule("event.seats", "gt", 4), True),
    (rule("event.seats", "gt", 5), False),
    (rule("event.seats", "gte", 5), True),
    (rule("event.seats", "lt", 5), False),
    (rule("event.seats", "lte", 5), True),
    (rule("event.tags", "contains", "beta"), True),
    (rule("event.ref", "contains", "mail"), True),
    (rule("event.ref", "starts_with", "utm-"), True),
    (rule("event.ref", "ends_with", "-web"), False),
    (rule("event.plan", "exists"), True),
    (rule("event.note", "is_empty"), True),
    (rule("event.tags", "is_empty"), False),
    # a missing field is absent, never an error
    (rule("event.missing", "eq", "pro"), False),
    (rule("event.missing", "neq", "pro"), True),
    (rule("event.missing", "gt", 1), False),
    (rule("event.missing", "lte", 1), False),
    (rule("event.missing", "contains", "x"), False),
    (rule("event.missing", "starts_with", "x"), False),
    (rule("event.missing", "exists"), False),
    (rule("event.missing", "is_empty"), True),
    (rule("event.plan.deeper", "eq", "x"), False),
    (rule("contact.first_name", "eq", "Ada"), True),
    (rule("contact.email", "ends_with", "@example.com"), True),
    (rule("contact.properties.company", "eq", "Analytical"), True),
    (rule("contact.properties.seats", "gte", 3), True),
    (rule("contact.last_name", "exists"), False),
    (rule("contact.unsubscribed", "eq", False), True),
    ({"type": "and", "rules": [rule("event.plan", "eq", "pro"), rule("event.seats", "gt", 9)]},
     False),
    ({"type": "or", "rules": [rule("event.plan", "eq", "free"), rule("event.seats", "gt", 1)]},
     True),
    (
        {
            "type": "and",
            "rules": [
                rule("contact.first_name", "eq", "Ada"),
                {"type": "or",
                 "rules": [rule("event.missing", "exists"), rule("event.ref", "contains", "mail")]},
            ],
        },
        True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(("condition", "met"), CONDITIONS)
async def test_a_condition_follows_met_or_not_met(
    world: World, condition: dict[str, Any], met: bool
) -> None:
    world.add(
        make_graph(
            {
                "check": {"type": "condition", "config": condition},
                "yes": tag("met"),
                "no": tag("not met"),
            },
            ("start", "check"),
            ("check", "yes", "condition_met"),
            ("check", "no", "condition_not_met"),
        )
    )
    world.contact(first_name="Ada", properties={"company": "Analytical", "seats": 3})
    run_id = await world.start(**EVENT)
    await world.engine.run_due()
    records = world.records(run_id)
    assert records["check"].output == {"met": met}
    assert ("yes" in records, "no" in records) == (met, not met)
    assert branch_of(world) == ("met" if met else "not met")
    assert world.run(run_id).status is RunStatus.COMPLETED


async def test_a_condition_without_the_branch_it_takes_ends_the_run(world: World) -> None:
    world.add(
        make_graph(
            {
                "check": {"type": "condition", "config": rule("event.plan", "eq", "pro")},
                "yes": tag("met"),
            },
            ("start", "check"),
            ("check", "yes", "condition_met"),
        )
    )
    run_id = await world.start(plan="free")
    await world.engine.run_due()
    assert world.run(run_id).status is RunStatus.COMPLETED
    assert list(world.records(run_id)) == ["check"]


# -- contact_update, add_to_segment, contact_delete ---------------------------------------


async def test_contact_update_with_literals_and_event_values(world: World) -> None:
    update = {
        "type": "contact_update",
        "config": {
            "first_name": {"var": "event.first"},
            "last_name": "Lovelace",
            "unsubscribed": True,
            "properties": {
                "plan": {"var": "event.plan"},
                "source": "signup",
                "known_as": {"var": "contact.first_name"},
                "absent": {"var": "event.missing"},
            },
        },
    }
    world.add(make_graph({"update": update}, ("start", "update")))
    contact = world.contact(first_name="Augusta", properties={"kept": 1})
    run_id = await world.start(first="Ada", plan="pro")
    await world.engine.run_due()
    updated = world.backend.contacts.contacts[contact["id"]]
    assert (updated["first_name"], updated["last_name"], updated["unsubscribed"]) == (
        "Ada", "Lovelace", True,
    )  # fmt: skip
    assert updated["properties"] == {
        "kept": 1, "plan": "pro", "source": "signup", "known_as": "Augusta", "absent": None,
    }  # fmt: skip
    record = world.records(run_id)["update"]
    assert record.output == {"changed": ["first_name", "last_name", "properties", "unsubscribed"]}


async def test_contact_update_fails_the_run_when_unsubscribed_is_not_a_boolean(
    world: World,
) -> None:
    update = {"type": "contact_update", "config": {"unsubscribed": {"var": "event.optout"}}}
    world.add(make_graph({"update": update}, ("start", "update")))
    run_id = await world.start(optout="yes please")
    await world.engine.run_due()
    run = world.run(run_id)
    assert run.status is RunStatus.FAILED
    assert run.error == "update: `unsubscribed` must resolve to true or false"
    assert world.records(run_id)["update"].status is StepStatus.FAILED


async def test_add_to_segment(world: World) -> None:
    step = {"type": "add_to_segment", "config": {"segment_id": "seg-vip"}}
    world.add(make_graph({"join": step}, ("start", "join")))
    run_id = await world.start()
    await world.engine.run_due()
    contact = world.contact_by_email("ada@example.com")
    assert contact is not None
    assert world.backend.contacts.segments["seg-vip"] == {contact["id"]}
    assert world.records(run_id)["join"].output == {"segment_id": "seg-vip"}
    assert world.run(run_id).status is RunStatus.COMPLETED


async def test_add_to_a_segment_deleted_since_fails_the_run(world: World) -> None:
    step = {"type": "add_to_segment", "config": {"segment_id": "seg-vip"}}
    world.add(make_graph({"join": step}, ("start", "join")))
    del world.backend.contacts.segments["seg-vip"]
    run_id = await world.start()
    await world.engine.run_due()
    assert world.run(run_id).status is RunStatus.FAILED
    assert world.run(run_id).error == "join: segment seg-vip no longer exists"


async def test_a_run_that_deletes_its_contact_completes(world: World) -> None:
    world.add(
        make_graph(
            {
                "join": {"type": "add_to_segment", "config": {"segment_id": "seg-vip"}},
                "bye": {"type": "contact_delete", "config": {}},
            },
            ("start", "join"),
            ("join", "bye"),
        )
    )
    contact = world.contact()
    run_id = await world.start()
    await world.engine.run_due()
    assert contact["id"] not in world.backend.contacts.contacts
    assert world.backend.contacts.segments["seg-vip"] == set()
    run = world.run(run_id)
    assert (run.status, run.phase, run.step_key) == (RunStatus.COMPLETED, Phase.DONE, "bye")
    assert world.records(run_id)["bye"].output == {"deleted": True}


async def test_a_step_after_the_contact_was_deleted_fails_the_run(world: World) -> None:
    world.add(
        make_graph(
            {"nap": {"type": "delay", "config": {"duration": "1 hour"}}, "welcome": SEND_WELCOME},
            ("start", "nap"),
            ("nap", "welcome"),
        )
    )
    contact = world.contact()
    run_id = await world.start()
    await world.engine.run_due()
    await world.backend.contacts.delete(TEAM, contact["id"])
    world.later(hours=1)
    await world.engine.run_due()
    assert world.run(run_id).status is RunStatus.FAILED
    assert world.run(run_id).error == "welcome: the contact no longer exists"
    assert world.emails() == []


# -- starting runs -----------------------------------------------------------------------


def nap_graph() -> Graph:
    return make_graph(
        {"nap": {"type": "delay", "config": {"duration": "1 day"}}, "welcome": SEND_WELCOME},
        ("start", "nap"), ("nap", "welcome"),
    )  # fmt: skip


async def test_no_reentry_while_a_run_is_active(world: World) -> None:
    world.add(nap_graph())
    first = await world.start()
    assert await world.emit() == ([], [])
    assert len(world.backend.runs.runs) == 1
    await world.engine.run_due()
    world.later(days=1)
    await world.engine.run_due()
    assert world.run(first).status is RunStatus.COMPLETED
    second = await world.start()  # the first ended: the contact may enter again
    assert second != first


async def test_reentry_when_the_automation_allows_it(world: World) -> None:
    world.add(nap_graph(), allow_reentry=True)
    first, second = await world.start(), await world.start()
    assert first != second
    assert world.run(first).contact_id == world.run(second).contact_id
    await world.engine.run_due()
    world.later(days=1)
    await world.engine.run_due()
    assert [e.run_id for e in world.emails()] == [first, second]


async def test_events_about_unknown_contacts_or_other_events_start_nothing(
    world: World,
) -> None:
    world.add(nap_graph())
    assert await world.emit("user.other") == ([], [])
    event = Event(TEAM, TRIGGER_EVENT, contact_id=str(uuid.uuid4()))
    assert (await world.engine.emit(event)).started == []
    assert (await world.engine.emit(Event("team-2", TRIGGER_EVENT, email="x@y.io"))).started == []
    assert world.backend.runs.runs == {}


async def test_an_event_naming_a_contact_by_id(world: World) -> None:
    world.add(nap_graph())
    contact = world.contact("grace@example.com")
    emitted = await world.engine.emit(Event(TEAM, TRIGGER_EVENT, contact_id=contact["id"]))
    assert world.run(emitted.started[0]).contact_id == contact["id"]


async def test_a_trigger_with_nothing_after_it_completes_at_once(world: World) -> None:
    world.add(make_graph({}))
    run_id = await world.start()
    assert world.run(run_id).status is RunStatus.COMPLETED
    assert (await world.engine.run_due()).runs == 0


async def test_run_quota() -> None:
    world = World(MemoryBackend(run_quota=2))
    world.add(nap_graph())
    await world.start("a@example.com")
    await world.start("b@example.com")
    with pytest.raises(RunQuotaExceeded):
        await world.emit(email="c@example.com")
    assert len(world.backend.runs.runs) == 2


# -- failures, versions, stopping --------------------------------------------------------


class ExplodingMailer(MemoryMailer):
    async def send(self, email: OutgoingEmail) -> str:
        if email.to.startswith("boom@"):
            raise RuntimeError("the mail server caught fire")
        return await super().send(email)


@pytest.mark.parametrize("bad_first", [True, False])
async def test_an_unexpected_error_fails_only_its_run(world: World, bad_first: bool) -> None:
    world.backend.mailer = ExplodingMailer()
    world.add(make_graph({"welcome": SEND_WELCOME}, ("start", "welcome")))
    order = ["boom@example.com", "ada@example.com"]
    if not bad_first:
        order.reverse()
    runs = {email: await world.start(email) for email in order}  # run ids in this order
    await world.engine.run_due()
    bad, good = world.run(runs["boom@example.com"]), world.run(runs["ada@example.com"])
    assert (bad.status, bad.error) == (RunStatus.FAILED, "unexpected error: RuntimeError")
    assert good.status is RunStatus.COMPLETED
    assert [e.to for e in world.emails()] == ["ada@example.com"]
    assert (await world.engine.run_due()).runs == 0


async def test_a_run_keeps_the_graph_version_it_started_on(world: World) -> None:
    automation = world.add(nap_graph())
    old = await world.start("old@example.com")
    await world.engine.run_due()
    second = make_graph(
        {"nap": {"type": "delay", "config": {"duration": "1 day"}}, "nudge": SEND_FOLLOW_UP},
        ("start", "nap"), ("nap", "nudge"),
    )  # fmt: skip
    assert world.add(second, automation_id=automation) == automation
    new = await world.start("new@example.com")
    assert (world.run(old).version, world.run(new).version) == (1, 2)
    await world.engine.run_due()
    world.later(days=1)
    await world.engine.run_due()
    assert {(e.to, e.template_id) for e in world.emails()} == {
        ("old@example.com", "tpl-welcome"), ("new@example.com", "tpl-follow"),
    }  # fmt: skip
    assert "welcome" in world.records(old)
    assert "nudge" in world.records(new)


async def test_stop_cancels_active_runs(world: World) -> None:
    automation = world.add(nap_graph(), allow_reentry=True)
    done = await world.start("a@example.com")
    await world.engine.run_due()
    world.later(days=1)
    await world.engine.run_due()
    assert world.run(done).status is RunStatus.COMPLETED
    sleeping = [await world.start("a@example.com"), await world.start("b@example.com")]
    await world.engine.run_due()
    stop_at = world.clock.now()
    assert world.backend.stop(automation, stop_at) == 2
    for run_id in sleeping:
        run = world.run(run_id)
        assert (run.status, run.phase, run.due_at, run.completed_at) == (
            RunStatus.CANCELLED, Phase.DONE, None, stop_at,
        )  # fmt: skip
    assert world.run(done).status is RunStatus.COMPLETED
    world.later(days=2)
    assert (await world.engine.run_due()).runs == 0
    assert len(world.emails()) == 1  # the welcome of the run that completed before
    assert await world.emit(email="c@example.com") == ([], [])  # disabled


async def test_a_stopped_waiting_run_is_not_resumed(world: World) -> None:
    automation = world.add(wait_graph())
    run_id = await world.start()
    await world.engine.run_due()
    assert world.backend.stop(automation, world.clock.now()) == 1
    assert await world.emit("user.paid", amount=500) == ([], [])
    assert await world.emit() == ([], [])  # disabled: the trigger starts nothing
    assert world.run(run_id).status is RunStatus.CANCELLED


async def test_a_run_of_a_deleted_automation_is_cancelled(world: World) -> None:
    automation = world.add(nap_graph())
    run_id = await world.start()
    await world.engine.run_due()
    del world.backend.automations.refs[automation]
    world.later(days=1)
    await world.engine.run_due()
    assert world.run(run_id).status is RunStatus.CANCELLED
    assert world.emails() == []
