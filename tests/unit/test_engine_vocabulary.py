"""The public <-> stored step vocabularies (spec §2.2) round trip, for generated steps."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mailbridge
from mailbridge.engine import Graph, MemoryReferences, TemplateContent, build
from mailbridge.engine.conditions import OPERATORS, UNARY, parse_rule
from mailbridge.engine.graph import Connection, Step, Trigger
from mailbridge.engine.vocabulary import stored_view
from mailbridge.steps import ALL, BY_PUBLIC_NAME, BY_STORED_NAME, VOCABULARY

STORED_NAMES = {
    "send_email": "send",
    "wait_for_event": "wait",
    "delay": "delay",
    "condition": "condition",
    "contact_update": "contact_update",
    "contact_delete": "contact_delete",
    "add_to_segment": "add_to_segment",
    "add_labels": "add_labels",
    "archive": "archive",
    "mark_as_spam": "mark_as_spam",
    "move_to_trash": "move_to_trash",
    "assign_thread": "assign_thread",
    "draft_reply": "draft_reply",
    "forward_thread": "forward_thread",
}


@pytest.mark.parametrize(("public", "stored"), sorted(STORED_NAMES.items()))
def test_type_names(public: str, stored: str) -> None:
    assert VOCABULARY.stored_type(public) == stored == BY_PUBLIC_NAME[public].stored_name
    assert VOCABULARY.public_type(stored) == public == BY_STORED_NAME[stored].name


def test_every_step_type_has_one_kind() -> None:
    assert sorted(kind.name for kind in ALL) == sorted(VOCABULARY.step_types)
    assert sorted(VOCABULARY.step_types) == sorted(STORED_NAMES)


# -- strategies --------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20).filter(str.strip)
identifiers = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.floats(
    allow_nan=False, allow_infinity=False
) | names  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(identifiers, inner, max_size=3),
    max_leaves=8,
)
addresses = st.builds(lambda local, name: f"{name} <{local}@acme.io>", identifiers, identifiers)
reply_tos = names | st.lists(names, min_size=1, max_size=3)
durations = (
    st.sampled_from(["3 days", "2h 30m", "P1DT2H", "90", "1 week", " 30 days ", "p2w"])
    | st.integers(1, 30 * 86400)
    | st.floats(1, 30 * 86400)
)


def rule_strategy() -> st.SearchStrategy[dict[str, Any]]:
    fields = st.builds(
        lambda root, path: f"{root}.{path}",
        st.sampled_from(["event", "contact"]),
        st.lists(identifiers, min_size=1, max_size=3).map(".".join),
    )

    def one(field: str, operator: str, value: Any) -> dict[str, Any]:
        rule = {"type": "rule", "field": field, "operator": operator}
        return rule if operator in UNARY else rule | {"value": value}

    plain = scalars | st.lists(scalars, max_size=3)
    leaves = st.builds(one, fields, st.sampled_from(OPERATORS), plain)
    return st.recursive(
        leaves,
        lambda inner: st.builds(
            lambda kind, rules: {"type": kind, "rules": rules},
            st.sampled_from(["and", "or"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        max_leaves=6,
    )


rules = rule_strategy()


@st.composite
def optional_keys(draw: st.DrawFn, /, **fields: st.SearchStrategy[Any]) -> dict[str, Any]:
    return {name: draw(value) for name, value in fields.items() if draw(st.booleans())}


@st.composite
def stored_sends(draw: st.DrawFn) -> tuple[dict[str, Any], TemplateContent]:
    """A stored send config and the published template it was snapshotted from."""
    template_id = draw(identifiers)
    config = {
        "from": draw(addresses),
        "subject": draw(names),
        "html": draw(st.none() | names),
        "text": draw(st.none() | names),
        "template_id": template_id,
    } | draw(optional_keys(variables=st.dictionaries(identifiers, json_values, max_size=4),
                           reply_to=reply_tos))  # fmt: skip
    template = TemplateContent(
        template_id,
        from_address=draw(st.none() | addresses),  # the stored one overrides it either way
        subject=draw(st.none() | names),
        html=config["html"],
        text=config["text"],
        # a stored send without reply_to came from a template without one
        reply_to=draw(st.none() | reply_tos) if "reply_to" in config else None,
    )
    return config, template


STORED_CONFIGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "delay": st.builds(lambda d: {"duration": d}, durations),
    "wait": st.builds(
        lambda name, rest: {"event_name": name, **rest},
        names,
        optional_keys(timeout=st.none() | durations, filter_rule=st.none() | rules),
    ),
    "condition": rules,
    "contact_update": optional_keys(
        first_name=json_values,
        last_name=json_values,
        unsubscribed=st.booleans(),
        properties=st.dictionaries(identifiers, json_values, max_size=4),
    ).filter(bool),
    "contact_delete": st.just({}),
    "add_to_segment": st.builds(lambda s: {"segment_id": s}, names),
    "add_labels": st.builds(lambda ls: {"labels": ls}, st.lists(names, min_size=1, max_size=3)),
    "archive": st.just({}),
    "mark_as_spam": st.just({}),
    "move_to_trash": st.just({}),
    "assign_thread": st.builds(lambda local: {"assignee": f"{local}@shop.io"}, identifiers),
    "forward_thread": st.builds(
        lambda locals_, rest: {"to": [f"{each}@shop.io" for each in locals_], **rest},
        st.lists(identifiers, min_size=1, max_size=3),
        optional_keys(text=names),
    ),
}


def refs_with(*templates: TemplateContent) -> MemoryReferences:
    return MemoryReferences(domain="acme.io", templates={t.id: t for t in templates})


# -- stored -> public -> stored ----------------------------------------------------------


@given(stored_sends(), st.integers(0, 149))
def test_a_stored_send_round_trips(sent: tuple[dict[str, Any], TemplateContent], pos: int) -> None:
    config, template = sent
    step = Step("id-1", "welcome", "send", pos, config)
    public = VOCABULARY.step_to_public(step)
    assert (public.type, public.id, public.key, public.position) == (
        "send_email",
        "id-1",
        "welcome",
        pos,
    )
    assert public.config["template"] == {"id": config["template_id"]}
    assert VOCABULARY.step_to_stored(public, refs_with(template)) == step


@pytest.mark.parametrize("stored_name", sorted(STORED_CONFIGS))
@given(data=st.data())
def test_other_stored_steps_round_trip(stored_name: str, data: st.DataObject) -> None:
    config = data.draw(STORED_CONFIGS[stored_name])
    step = Step("id-1", "s", stored_name, 3, config)
    public = VOCABULARY.step_to_public(step)
    assert public.type == VOCABULARY.public_type(stored_name)
    assert public.config == config  # only send is renamed field by field
    references = MemoryReferences(segments={config.get("segment_id", "")})
    assert BY_PUBLIC_NAME[public.type].check(public.config, references) == []
    assert VOCABULARY.step_to_stored(public, refs_with()) == step
    assert VOCABULARY.public_config(config, stored_name) == public.config


def test_a_draft_reply_snapshots_its_template_and_round_trips() -> None:
    public = {"template": {"id": "tpl-1"}, "variables": {"PLAN": "gold"}}
    kind = BY_PUBLIC_NAME["draft_reply"]
    assert kind.check(public, GRAPH_REFS) == []
    stored = kind.to_stored(public, GRAPH_REFS)
    assert stored == {
        "template_id": "tpl-1", "subject": "Welcome", "html": "<p>Hi</p>", "text": "Hi",
        "variables": {"PLAN": "gold"},
    }  # fmt: skip
    assert kind.to_public(stored) == public
    unknown = {"template": {"id": "nope"}}
    assert kind.check(unknown, GRAPH_REFS) == [
        "config.template.id: template 'nope' is not published"
    ]


# -- public -> stored -> public ----------------------------------------------------------


@st.composite
def public_sends(draw: st.DrawFn) -> tuple[dict[str, Any], TemplateContent]:
    template = TemplateContent(
        draw(identifiers),
        from_address=draw(addresses),
        subject=draw(names),
        html=draw(st.none() | names),
        text=draw(st.none() | names),
        reply_to=draw(st.none() | reply_tos),
    )
    config = {"template": {"id": template.id}} | draw(
        optional_keys(
            variables=st.dictionaries(identifiers, json_values, max_size=4),
            **{"from": addresses},
            subject=names,
            reply_to=reply_tos,
        )
    )
    return config, template


@given(public_sends())
def test_a_public_send_round_trips_with_the_template_filling_in(
    sent: tuple[dict[str, Any], TemplateContent],
) -> None:
    config, template = sent
    kind, references = BY_PUBLIC_NAME["send_email"], refs_with(template)
    assert kind.check(config, references) == []
    stored = kind.to_stored(config, references)
    assert (stored["html"], stored["text"], stored["template_id"]) == (
        template.html, template.text, template.id,
    )  # fmt: skip
    expected = dict(config)
    expected.setdefault("from", template.from_address)
    expected.setdefault("subject", template.subject)
    if template.reply_to is not None:
        expected.setdefault("reply_to", template.reply_to)
    assert kind.to_public(stored) == expected


@pytest.mark.parametrize("stored_name", sorted(STORED_CONFIGS))
@given(data=st.data())
def test_other_public_configs_round_trip(stored_name: str, data: st.DataObject) -> None:
    config = data.draw(STORED_CONFIGS[stored_name])  # the same shape in both vocabularies
    kind = BY_STORED_NAME[stored_name]
    assert kind.to_public(kind.to_stored(config, refs_with())) == config


def test_public_extras_are_dropped_and_a_template_alias_stores_its_id() -> None:
    template = TemplateContent("tpl-1", "a@acme.io", "Hi", "<p>x</p>", None)
    references = MemoryReferences(
        domain="acme.io", templates={"tpl-1": template, "welcome": template}
    )
    stored = BY_PUBLIC_NAME["send_email"].to_stored(
        {"template": {"id": "welcome", "version": 3}, "colour": "red"}, references
    )
    assert stored == {
        "from": "a@acme.io", "subject": "Hi", "html": "<p>x</p>", "text": None,
        "template_id": "tpl-1",
    }  # fmt: skip
    delay = BY_PUBLIC_NAME["delay"].to_stored({"duration": "1 day", "note": "x"}, references)
    assert delay == {"duration": "1 day"}


# -- whole graphs ------------------------------------------------------------------------

EDGE_OUT = {
    "send_email": ["default"],
    "delay": ["default"],
    "wait_for_event": ["event_received", "timeout"],
    "condition": ["condition_met", "condition_not_met"],
    "contact_update": ["default"],
    "add_to_segment": ["default"],
    "add_labels": ["default"],
    "archive": ["default"],
    "mark_as_spam": ["default"],
    "move_to_trash": ["default"],
    "assign_thread": ["default"],
    "draft_reply": ["default"],
    "forward_thread": ["default"],
}
TEMPLATE = TemplateContent("tpl-1", "hello@acme.io", "Welcome", "<p>Hi</p>", "Hi", "help@acme.io")
GRAPH_REFS = MemoryReferences(domain="acme.io", templates={"tpl-1": TEMPLATE}, segments={"seg-1"})
PUBLIC_CONFIGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "send_email": st.builds(
        lambda rest: {"template": {"id": "tpl-1"}, **rest},
        optional_keys(
            subject=names, variables=st.dictionaries(identifiers, json_values, max_size=2)
        ),
    ),
    "delay": STORED_CONFIGS["delay"],
    "wait_for_event": STORED_CONFIGS["wait"],
    "condition": STORED_CONFIGS["condition"],
    "contact_update": STORED_CONFIGS["contact_update"],
    "add_to_segment": st.just({"segment_id": "seg-1"}),
    "contact_delete": st.just({}),
    "add_labels": STORED_CONFIGS["add_labels"],
    "archive": st.just({}),
    "mark_as_spam": st.just({}),
    "move_to_trash": st.just({}),
    "assign_thread": STORED_CONFIGS["assign_thread"],
    "forward_thread": STORED_CONFIGS["forward_thread"],
    "draft_reply": st.builds(
        lambda rest: {"template": {"id": "tpl-1"}, **rest},
        optional_keys(variables=st.dictionaries(identifiers, json_values, max_size=2)),
    ),
}


@st.composite
def public_graphs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """A valid public graph: a trigger and a chain of steps, each leaving by an edge type it
    allows, sometimes ending on a contact_delete."""
    kinds = draw(st.lists(st.sampled_from(sorted(EDGE_OUT)), max_size=8))
    if draw(st.booleans()):
        kinds.append("contact_delete")
    keys = [f"step-{i}" for i in range(len(kinds))]
    trigger: dict[str, Any] = {
        "key": "start",
        "type": "trigger",
        "config": {"event_name": draw(names)},
    }
    if draw(st.booleans()):
        trigger["config"]["domain"] = "acme.io"
    steps = [trigger] + [
        {"key": key, "type": kind, "config": draw(PUBLIC_CONFIGS[kind])}
        for key, kind in zip(keys, kinds, strict=True)
    ]
    connections = []
    for source, target in zip(["start", *keys], keys, strict=False):
        kind = "trigger" if source == "start" else kinds[keys.index(source)]
        via = draw(st.sampled_from(EDGE_OUT.get(kind, ["default"])))
        connections.append({"from": source, "to": target, "type": via})
    return steps, connections


@settings(max_examples=50)
@given(public_graphs())
def test_a_built_graph_round_trips(
    public: tuple[list[dict[str, Any]], list[dict[str, str]]],
) -> None:
    steps, connections = public
    graph = build(VOCABULARY, steps, connections, GRAPH_REFS)
    # serialized as a version keeps it (through JSON, as the database does)
    assert Graph.from_dict(json.loads(json.dumps(graph.as_dict()))) == graph
    assert Graph.from_dict(graph.as_dict()).first_key == graph.first_key
    # the public view builds back into the same stored graph, ids kept
    view = VOCABULARY.public_view(graph)
    assert view["trigger_key"] == "start"
    assert view["steps"][0] == {
        "key": "start", "type": "trigger",
        "config": {"event_name": steps[0]["config"]["event_name"].strip(),
                   "domain": steps[0]["config"].get("domain")},
    }  # fmt: skip
    assert [s["type"] for s in view["steps"][1:]] == [s["type"] for s in steps[1:]]
    assert [s["position"] for s in view["steps"][1:]] == list(range(len(steps) - 1))
    assert view["connections"] == connections
    assert (
        build(VOCABULARY, view["steps"], view["connections"], GRAPH_REFS, previous=graph) == graph
    )
    assert Graph.from_dict(view) == VOCABULARY.graph_to_public(graph)
    for stored in graph:
        assert stored_view(stored) == stored.as_dict()
        assert stored.type == VOCABULARY.stored_type(VOCABULARY.public_type(stored.type))


def test_graph_from_dict_needs_a_trigger() -> None:
    with pytest.raises(ValueError, match="trigger"):
        Graph.from_dict({"steps": [], "connections": []})


def test_graph_from_dict_defaults_the_connection_type() -> None:
    graph = Graph.from_dict(
        {
            "steps": [
                {"key": "t", "type": "trigger", "config": {"event_name": "e"}},
                {"id": "1", "key": "d", "type": "delay", "position": 0, "config": {"duration": 60}},
            ],
            "connections": [{"from": "t", "to": "d"}],
        }
    )
    assert graph == Graph(
        Trigger("t", "e"), (Step("1", "d", "delay", 0, {"duration": 60}),), (Connection("t", "d"),)
    )
    assert graph.next_key("t") == "d"
    assert graph.next_key("t", "timeout") is None
    assert "default" in VOCABULARY.connection_types


@given(rules)
def test_generated_rules_are_valid(rule: dict[str, Any]) -> None:
    parse_rule(rule)


def test_a_step_module_can_be_imported_before_the_engine() -> None:
    """The steps import the engine's modules (the engine imports no step: it is handed a
    vocabulary): whichever is imported first, neither finds the other half-initialized."""
    ours = ("mailbridge.engine", "mailbridge.steps")
    saved = {name: module for name, module in sys.modules.items() if name.startswith(ours)}
    for name in saved:
        del sys.modules[name]
    try:
        delay = importlib.import_module("mailbridge.steps.delay")
        engine = importlib.import_module("mailbridge.engine")
        assert engine.build is importlib.import_module("mailbridge.engine.validation").build
        assert delay.Delay.stored_name == "delay"
    finally:
        for name in [name for name in sys.modules if name.startswith(ours)]:
            del sys.modules[name]
        sys.modules.update(saved)
        mailbridge.engine = saved["mailbridge.engine"]
        mailbridge.steps = saved["mailbridge.steps"]
