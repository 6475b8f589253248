"""engine.validation.build: every rule of DESIGN §4 is a problem naming its step key,
and every problem of a graph is reported at once."""

from __future__ import annotations

from typing import Any

import pytest

from mailbridge.engine import GraphInvalid, MemoryReferences, Problem, TemplateContent, build
from mailbridge.engine.graph import MAX_STEPS
from mailbridge.steps import VOCABULARY

TRIGGER = {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}}
WELCOME = TemplateContent("tpl-welcome", "Acme <hello@acme.io>", "Welcome", "<p>Hi</p>", "Hi")
BARE = TemplateContent("tpl-bare", None, None, "<p>bare</p>", None)
ELSEWHERE = TemplateContent("tpl-elsewhere", "news@other.io", "News", "<p>n</p>", None)

RULE = {"type": "rule", "field": "event.plan", "operator": "eq", "value": "pro"}
VALID_CONFIGS: dict[str, dict[str, Any]] = {
    "send_email": {"template": {"id": "tpl-welcome"}},
    "delay": {"duration": "3 days"},
    "wait_for_event": {"event_name": "user.paid", "timeout": "2 days"},
    "condition": RULE,
    "contact_update": {"properties": {"plan": "pro"}},
    "contact_delete": {},
    "add_to_segment": {"segment_id": "seg-vip"},
}
EDGES = {
    "send_email": {"default"},
    "delay": {"default"},
    "wait_for_event": {"event_received", "timeout"},
    "condition": {"condition_met", "condition_not_met"},
    "contact_update": {"default"},
    "contact_delete": set(),
    "add_to_segment": {"default"},
}
CONNECTION_TYPES = ("default", "condition_met", "condition_not_met", "timeout", "event_received")


@pytest.fixture
def refs() -> MemoryReferences:
    return MemoryReferences(
        domain="acme.io",
        templates={t.id: t for t in (WELCOME, BARE, ELSEWHERE)},
        segments={"seg-vip"},
    )


def step(key: str, kind: str, config: object = None) -> dict[str, Any]:
    return {"key": key, "type": kind, "config": VALID_CONFIGS[kind] if config is None else config}


def edge(source: str, target: str, kind: str | None = None) -> dict[str, str]:
    return {"from": source, "to": target} | ({"type": kind} if kind else {})


def problems_of(refs: MemoryReferences, steps: object, connections: object) -> list[Problem]:
    with pytest.raises(GraphInvalid) as caught:
        build(VOCABULARY, steps, connections, refs)
    assert caught.value.problems, "GraphInvalid always names a problem"
    return caught.value.problems


def has(problems: list[Problem], key: str | None, fragment: str) -> bool:
    return any(p.key == key and fragment in p.message for p in problems)


def the_problem(problems: list[Problem], key: str | None, fragment: str) -> None:
    assert has(problems, key, fragment), [str(p) for p in problems]


def one_step(refs: MemoryReferences, kind: str, config: object) -> list[Problem]:
    return problems_of(refs, [TRIGGER, step("s", kind, config)], [edge("start", "s")])


# -- what a valid graph becomes ---------------------------------------------------------


def test_a_valid_graph_is_stored_in_the_stored_vocabulary(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("welcome", "send_email"), step("wait", "wait_for_event")]
    graph = build(VOCABULARY, steps, [edge("start", "welcome"), edge("welcome", "wait")], refs)
    assert graph.trigger.key == "start"
    assert graph.trigger.event_name == "user.signed_up"
    assert [(s.key, s.type, s.position) for s in graph] == [
        ("welcome", "send", 0),
        ("wait", "wait", 1),
    ]
    assert graph.step("welcome").config == {
        "from": "Acme <hello@acme.io>",
        "subject": "Welcome",
        "html": "<p>Hi</p>",
        "text": "Hi",
        "template_id": "tpl-welcome",
    }
    assert [c.as_dict() for c in graph.connections] == [
        {"from": "start", "to": "welcome", "type": "default"},
        {"from": "welcome", "to": "wait", "type": "default"},
    ]
    assert graph.first_key == "welcome"


def test_steps_keep_their_ids_across_versions(refs: MemoryReferences) -> None:
    counter = iter(range(100))
    first = build(VOCABULARY,
        [TRIGGER, step("a", "delay")], [edge("start", "a")], refs,
        new_id=lambda: f"id-{next(counter)}",
    )  # fmt: skip
    second = build(
        VOCABULARY,
        [TRIGGER, step("a", "delay"), step("b", "contact_delete")],
        [edge("start", "a"), edge("a", "b")],
        refs,
        previous=first,
        new_id=lambda: f"id-{next(counter)}",
    )
    assert first.step("a").id == second.step("a").id == "id-0"
    assert second.step("b").id == "id-1"


def test_a_trigger_alone_is_a_valid_graph(refs: MemoryReferences) -> None:
    graph = build(VOCABULARY, [TRIGGER], [], refs)
    assert graph.steps == ()
    assert graph.first_key is None


# -- triggers and keys ------------------------------------------------------------------


def test_a_graph_without_a_trigger(refs: MemoryReferences) -> None:
    problems = problems_of(refs, [step("a", "delay")], [])
    the_problem(problems, None, "exactly one trigger step, not 0")


def test_a_graph_with_two_triggers(refs: MemoryReferences) -> None:
    second = {"key": "again", "type": "trigger", "config": {"event_name": "other"}}
    steps = [TRIGGER, second, step("a", "delay")]
    problems = problems_of(refs, steps, [edge("start", "a"), edge("again", "a")])
    the_problem(problems, None, "exactly one trigger step, not 2")


def test_a_trigger_needs_an_event_name(refs: MemoryReferences) -> None:
    problems = problems_of(refs, [{"key": "start", "type": "trigger", "config": {}}], [])
    the_problem(problems, "start", "config.event_name")


def test_keys_are_unique(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("a", "delay"), step("a", "contact_delete")]
    problems = problems_of(refs, steps, [edge("start", "a")])
    the_problem(problems, "a", "more than one step")


@pytest.mark.parametrize("item", [{"type": "delay"}, {"key": "", "type": "delay"}, "delay", 7])
def test_every_step_needs_a_key(refs: MemoryReferences, item: object) -> None:
    problems = problems_of(refs, [TRIGGER, item], [])
    the_problem(problems, "steps[1]", "needs a `key`")


def test_an_unknown_step_type(refs: MemoryReferences) -> None:
    problems = problems_of(refs, [TRIGGER, step("a", "delay"), {"key": "b", "type": "fax"}], [])
    the_problem(problems, "b", "unknown step type 'fax'")


@pytest.mark.parametrize("steps", [None, [], {"key": "start"}])
def test_steps_must_be_a_list_with_a_trigger(refs: MemoryReferences, steps: object) -> None:
    the_problem(problems_of(refs, steps, []), None, "`steps` must be a list")


def test_too_many_steps(refs: MemoryReferences) -> None:
    def chain(count: int) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        keys = [f"d{i}" for i in range(count)]
        steps = [TRIGGER, *(step(key, "delay") for key in keys)]
        return steps, [edge(a, b) for a, b in zip(["start", *keys], keys, strict=False)]

    assert len(build(VOCABULARY, *chain(MAX_STEPS), refs).steps) == MAX_STEPS == 150
    the_problem(problems_of(refs, *chain(MAX_STEPS + 1)), None, "at most 150 steps, not 151")


# -- connections --------------------------------------------------------------------------


def test_connections_name_existing_keys(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("a", "delay")]
    problems = problems_of(refs, steps, [edge("start", "a"), edge("a", "ghost"), edge("nope", "a")])
    the_problem(problems, "a", "unknown step ghost")
    the_problem(problems, "nope", "unknown step nope")


def test_a_connection_into_a_step_of_unknown_type_is_unknown(refs: MemoryReferences) -> None:
    steps = [TRIGGER, {"key": "b", "type": "fax"}]
    problems = problems_of(refs, steps, [edge("start", "b")])
    the_problem(problems, "b", "unknown step type")
    the_problem(problems, "start", "unknown step b")


@pytest.mark.parametrize(
    "item", [{"from": "start"}, {"to": "a"}, "start->a", {"from": 1, "to": "a"}]
)
def test_a_connection_needs_from_and_to(refs: MemoryReferences, item: object) -> None:
    problems = problems_of(refs, [TRIGGER, step("a", "delay")], [edge("start", "a"), item])
    the_problem(problems, "connections[1]", "needs `from` and `to`")


def test_connections_must_be_a_list(refs: MemoryReferences) -> None:
    the_problem(problems_of(refs, [TRIGGER], {"from": "start"}), None, "must be a list")


def test_an_unknown_connection_type(refs: MemoryReferences) -> None:
    problems = problems_of(refs, [TRIGGER, step("a", "delay")], [edge("start", "a", "sometimes")])
    the_problem(problems, "start", "connection type 'sometimes' is not one of")


@pytest.mark.parametrize("kind", sorted(EDGES))
@pytest.mark.parametrize("connection_type", CONNECTION_TYPES)
def test_edge_types_allowed_per_step(
    refs: MemoryReferences, kind: str, connection_type: str
) -> None:
    steps = [TRIGGER, step("s", kind), step("next", "delay")]
    connections = [edge("start", "s"), edge("s", "next", connection_type)]
    if connection_type in EDGES[kind]:
        graph = build(VOCABULARY, steps, connections, refs)
        assert graph.next_key("s", connection_type) == "next"
    elif not EDGES[kind]:
        the_problem(problems_of(refs, steps, connections), "s", "ends the run")
    else:
        problems = problems_of(refs, steps, connections)
        the_problem(problems, "s", f"a {connection_type!r} connection cannot leave it")


@pytest.mark.parametrize("connection_type", [t for t in CONNECTION_TYPES if t != "default"])
def test_the_trigger_leaves_by_default_only(refs: MemoryReferences, connection_type: str) -> None:
    problems = problems_of(
        refs, [TRIGGER, step("a", "delay")], [edge("start", "a", connection_type)]
    )
    the_problem(problems, "start", f"a {connection_type!r} connection cannot leave it")


@pytest.mark.parametrize(
    ("kind", "connection_type"),
    [("delay", "default"), ("condition", "condition_met"), ("wait_for_event", "timeout")],
)
def test_at_most_one_edge_of_a_type_out_of_a_step(
    refs: MemoryReferences, kind: str, connection_type: str
) -> None:
    steps = [TRIGGER, step("s", kind), step("x", "delay"), step("y", "delay")]
    connections = [
        edge("start", "s"), edge("s", "x", connection_type), edge("s", "y", connection_type),
    ]  # fmt: skip
    problems = problems_of(refs, steps, connections)
    the_problem(problems, "s", f"more than one {connection_type!r} connection")


def test_contact_delete_is_terminal(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("bye", "contact_delete"), step("after", "delay")]
    problems = problems_of(refs, steps, [edge("start", "bye"), edge("bye", "after")])
    the_problem(problems, "bye", "this step ends the run: no connection may leave it")


def test_nothing_connects_into_the_trigger(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("a", "delay")]
    problems = problems_of(refs, steps, [edge("start", "a"), edge("a", "start")])
    the_problem(problems, "a", "nothing may connect into the trigger")


def test_cycles(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("a", "delay"), step("b", "delay"), step("c", "delay")]
    problems = problems_of(
        refs, steps, [edge("start", "a"), edge("a", "b"), edge("b", "c"), edge("c", "b")]
    )
    cycles = [p for p in problems if "cycle" in p.message]
    assert len(cycles) == 1
    assert cycles[0].key in {"b", "c"}
    assert "b -> c -> b" in cycles[0].message or "c -> b -> c" in cycles[0].message


def test_a_step_connected_to_itself_is_a_cycle(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("a", "delay")]
    problems = problems_of(refs, steps, [edge("start", "a"), edge("a", "a")])
    the_problem(problems, "a", "cycle (a -> a)")


def test_every_step_is_reachable_from_the_trigger(refs: MemoryReferences) -> None:
    steps = [TRIGGER, step("a", "delay"), step("island", "delay"), step("tail", "contact_delete")]
    problems = problems_of(refs, steps, [edge("start", "a"), edge("island", "tail")])
    the_problem(problems, "island", "not reachable from the trigger")
    the_problem(problems, "tail", "not reachable from the trigger")
    assert not has(problems, "a", "not reachable")


# -- references and durations -----------------------------------------------------------


def test_a_send_step_names_a_published_template(refs: MemoryReferences) -> None:
    problems = one_step(refs, "send_email", {"template": {"id": "tpl-draft"}})
    the_problem(problems, "s", "template 'tpl-draft' is not published")


def test_a_segment_must_exist(refs: MemoryReferences) -> None:
    problems = one_step(refs, "add_to_segment", {"segment_id": "seg-gone"})
    the_problem(problems, "s", "segment 'seg-gone' does not exist")


@pytest.mark.parametrize(
    ("kind", "config", "where"),
    [
        ("delay", {"duration": "31 days"}, "config.duration"),
        ("delay", {"duration": 30 * 86400 + 1}, "config.duration"),
        ("delay", {"duration": "P5W"}, "config.duration"),
        ("wait_for_event", {"event_name": "paid", "timeout": "6 weeks"}, "config.timeout"),
    ],
)
def test_durations_are_at_most_30_days(
    refs: MemoryReferences, kind: str, config: dict[str, Any], where: str
) -> None:
    the_problem(one_step(refs, kind, config), "s", f"{where}: a duration is at most 30 days")


def test_thirty_days_exactly_is_allowed(refs: MemoryReferences) -> None:
    graph = build(
        VOCABULARY,
        [TRIGGER, step("s", "delay", {"duration": "30 days"})],
        [edge("start", "s")],
        refs,
    )
    assert graph.step("s").config == {"duration": "30 days"}


# -- configs of each type ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "config", "fragment"),
    [
        ("send_email", {}, "config.template: Field required"),
        ("send_email", {"template": {}}, "config.template.id: Field required"),
        ("send_email", {"template": {"id": ""}}, "config.template.id"),
        ("send_email", {"template": "tpl-welcome"}, "config.template"),
        ("send_email", {"template": {"id": "tpl-welcome"}, "variables": [1]}, "config.variables"),
        ("delay", {}, "config.duration: Field required"),
        ("delay", {"duration": "soon"}, "'soon' is not a duration we can read"),
        ("delay", {"duration": 0}, "at least one second"),
        ("delay", {"duration": None}, "config.duration"),
        ("wait_for_event", {}, "config.event_name: Field required"),
        ("wait_for_event", {"event_name": ""}, "config.event_name"),
        ("wait_for_event", {"event_name": "paid", "timeout": "whenever"}, "config.timeout"),
        (
            "wait_for_event",
            {
                "event_name": "paid",
                "filter_rule": {"type": "rule", "field": "plan", "operator": "eq"},
            },
            "config.filter_rule.rule.field: a field starts with `event.` or `contact.`",
        ),
        ("condition", {}, "config: Unable to extract tag using discriminator 'type'"),
        ("condition", RULE | {"operator": "like"}, "config.rule.operator"),
        ("condition", RULE | {"field": "payload.plan"}, "config.rule.field"),
        ("condition", RULE | {"field": "event."}, "config.rule.field"),
        ("condition", RULE | {"value": {"nested": 1}}, "config.rule.value"),
        ("condition", RULE | {"extra": 1}, "config.rule.extra"),
        (
            "condition",
            {"type": "and", "rules": []},
            "config.and.rules: List should have at least 1 item",
        ),
        ("condition", {"type": "not", "rules": [RULE]}, "does not match any of the expected tags"),
        (
            "condition",
            {"type": "or", "rules": [RULE, {"type": "rule"}]},
            "config.or.rules.1.rule.field: Field required",
        ),
        ("contact_update", {}, "set at least one of first_name"),
        ("contact_update", {"properties": [1]}, "config.properties"),
        ("add_to_segment", {}, "config.segment_id: Field required"),
        ("add_to_segment", {"segment_id": ""}, "config.segment_id"),
    ],
)
def test_bad_configs(refs: MemoryReferences, kind: str, config: object, fragment: str) -> None:
    the_problem(one_step(refs, kind, config), "s", fragment)


@pytest.mark.parametrize("kind", sorted(VALID_CONFIGS))
def test_a_config_is_an_object(refs: MemoryReferences, kind: str) -> None:
    the_problem(one_step(refs, kind, ["not", "an", "object"]), "s", "`config` must be an object")


@pytest.mark.parametrize("kind", sorted(VALID_CONFIGS))
def test_the_valid_config_of_each_type_builds(refs: MemoryReferences, kind: str) -> None:
    graph = build(VOCABULARY, [TRIGGER, step("s", kind)], [edge("start", "s")], refs)
    assert graph.step("s").key == "s"


# -- the sender of a send step ----------------------------------------------------------


def test_a_send_step_from_another_domain(refs: MemoryReferences) -> None:
    config = {"template": {"id": "tpl-welcome"}, "from": "Spoof <ceo@other.io>"}
    the_problem(one_step(refs, "send_email", config), "s", "is not on the domain acme.io")


def test_a_template_from_another_domain(refs: MemoryReferences) -> None:
    problems = one_step(refs, "send_email", {"template": {"id": "tpl-elsewhere"}})
    the_problem(problems, "s", "'news@other.io' is not on the domain acme.io")


def test_the_step_from_overrides_the_template_from(refs: MemoryReferences) -> None:
    config = {"template": {"id": "tpl-elsewhere"}, "from": "Acme <News@ACME.io>"}
    graph = build(
        VOCABULARY, [TRIGGER, step("s", "send_email", config)], [edge("start", "s")], refs
    )
    assert graph.step("s").config["from"] == "Acme <News@ACME.io>"


def test_a_sender_and_a_subject_come_from_the_step_or_the_template(
    refs: MemoryReferences,
) -> None:
    problems = one_step(refs, "send_email", {"template": {"id": "tpl-bare"}})
    the_problem(problems, "s", "config.from: neither the step nor its template has a `from`")
    the_problem(problems, "s", "config.subject: neither the step nor its template has a subject")
    config = {"template": {"id": "tpl-bare"}, "from": "a@acme.io", "subject": "Hi"}
    graph = build(
        VOCABULARY, [TRIGGER, step("s", "send_email", config)], [edge("start", "s")], refs
    )
    assert graph.step("s").config["subject"] == "Hi"


# -- all at once -------------------------------------------------------------------------


def test_every_problem_is_reported_at_once(refs: MemoryReferences) -> None:
    steps = [
        TRIGGER,
        step("welcome", "send_email", {"template": {"id": "tpl-draft"}}),
        step("nap", "delay", {"duration": "40 days"}),
        step("check", "condition"),
        step("bye", "contact_delete"),
        step("join", "add_to_segment", {"segment_id": "seg-gone"}),
        step("nap", "delay"),
        step("island", "contact_update"),
    ]
    connections = [
        edge("start", "welcome"),
        edge("welcome", "nap"),
        edge("nap", "check"),
        edge("check", "bye"),  # default out of a condition
        edge("bye", "join"),  # out of a terminal step
        edge("check", "ghost", "condition_met"),
    ]
    problems = problems_of(refs, steps, connections)
    expected = [
        ("welcome", "is not published"),
        ("nap", "at most 30 days"),
        ("nap", "more than one step"),
        ("check", "a 'default' connection cannot leave it"),
        ("check", "unknown step ghost"),
        ("bye", "ends the run"),
        ("join", "does not exist"),
        ("island", "not reachable"),
    ]
    for key, fragment in expected:
        the_problem(problems, key, fragment)
    assert len(problems) == len(expected)
    message = str(GraphInvalid(problems))
    assert "welcome: " in message
    assert "island: not reachable from the trigger" in message
