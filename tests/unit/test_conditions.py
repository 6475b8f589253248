"""engine.conditions: rules on ``event.*`` and ``contact.*``, evaluated with jsonlogic."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mailbridge.engine.conditions import holds, parse_rule, resolve_value, to_json_logic

DATA: dict[str, Any] = {
    "event": {
        "plan": "pro",
        "seats": 5,
        "price": 9.5,
        "tags": ["beta", "eu"],
        "meta": {"source": "ads", "depth": {"level": 2}},
        "note": "",
        "empty_list": [],
        "empty_object": {},
        "nothing": None,
        "zero": 0,
        "off": False,
        "count_text": "5",
    },
    "contact": {
        "email": "ada@example.com",
        "first_name": "Ada",
        "last_name": None,
        "unsubscribed": False,
        "properties": {"company": "Analytical Engines", "seats": 3},
    },
}


def rule(field: str, operator: str, value: Any = None) -> dict[str, Any]:
    return {"type": "rule", "field": field, "operator": operator, "value": value}


def both(kind: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "rules": list(rules)}


HOLDS = [
    # eq / neq: Python equality, no string-number coercion
    (rule("event.plan", "eq", "pro"), True),
    (rule("event.plan", "eq", "Pro"), False),
    (rule("event.seats", "eq", 5), True),
    (rule("event.seats", "eq", 5.0), True),
    (rule("event.seats", "eq", "5"), False),
    (rule("event.count_text", "eq", 5), False),
    (rule("event.tags", "eq", ["beta", "eu"]), True),
    (rule("event.nothing", "eq", None), True),
    (rule("event.plan", "neq", "free"), True),
    (rule("event.plan", "neq", "pro"), False),
    # ordering
    (rule("event.seats", "gt", 4), True),
    (rule("event.seats", "gt", 5), False),
    (rule("event.seats", "gte", 5), True),
    (rule("event.seats", "lt", 5), False),
    (rule("event.seats", "lt", 5.5), True),
    (rule("event.price", "lte", 9.5), True),
    (rule("event.plan", "gt", "free"), True),  # strings order as strings
    # mismatched types are not an error, the rule just does not hold
    (rule("event.plan", "gt", 3), False),
    (rule("event.seats", "gt", "3"), False),
    (rule("event.tags", "lt", 3), False),
    # string and list operators
    (rule("event.tags", "contains", "beta"), True),
    (rule("event.tags", "contains", "us"), False),
    (rule("event.plan", "contains", "r"), True),
    (rule("event.meta", "contains", "source"), True),
    (rule("event.seats", "contains", 5), False),
    (rule("event.plan", "starts_with", "pr"), True),
    (rule("event.plan", "starts_with", "ro"), False),
    (rule("event.plan", "ends_with", "ro"), True),
    (rule("event.seats", "ends_with", "5"), False),
    # exists / is_empty
    (rule("event.plan", "exists"), True),
    (rule("event.zero", "exists"), True),
    (rule("event.off", "exists"), True),
    (rule("event.nothing", "exists"), False),
    (rule("event.note", "is_empty"), True),
    (rule("event.empty_list", "is_empty"), True),
    (rule("event.empty_object", "is_empty"), True),
    (rule("event.nothing", "is_empty"), True),
    (rule("event.zero", "is_empty"), False),
    (rule("event.off", "is_empty"), False),
    (rule("event.tags", "is_empty"), False),
    # nested paths and list indexes
    (rule("event.meta.source", "eq", "ads"), True),
    (rule("event.meta.depth.level", "gte", 2), True),
    (rule("event.tags.0", "eq", "beta"), True),
    # a missing field is absent: never an error
    (rule("event.missing", "eq", "x"), False),
    (rule("event.missing", "eq", None), True),
    (rule("event.missing", "neq", "x"), True),
    (rule("event.missing", "gt", 0), False),
    (rule("event.missing", "gte", 0), False),
    (rule("event.missing", "lt", 0), False),
    (rule("event.missing", "lte", 0), False),
    (rule("event.missing", "contains", "x"), False),
    (rule("event.missing", "starts_with", "x"), False),
    (rule("event.missing", "ends_with", "x"), False),
    (rule("event.missing", "exists"), False),
    (rule("event.missing", "is_empty"), True),
    (rule("event.plan.deeper", "eq", "x"), False),  # a path through a string
    (rule("event.meta.nope.deeper", "exists"), False),
    (rule("event.tags.7", "exists"), False),
    # contact fields
    (rule("contact.first_name", "eq", "Ada"), True),
    (rule("contact.email", "ends_with", "@example.com"), True),
    (rule("contact.last_name", "exists"), False),
    (rule("contact.unsubscribed", "eq", False), True),
    (rule("contact.properties.company", "starts_with", "Analytical"), True),
    (rule("contact.properties.seats", "lt", 5), True),
    (rule("contact.properties.plan", "exists"), False),
    # groups
    (both("and", rule("event.plan", "eq", "pro"), rule("event.seats", "gt", 1)), True),
    (both("and", rule("event.plan", "eq", "pro"), rule("event.seats", "gt", 9)), False),
    (both("or", rule("event.plan", "eq", "free"), rule("event.seats", "gt", 1)), True),
    (both("or", rule("event.plan", "eq", "free"), rule("event.missing", "exists")), False),
    (both("and", rule("event.plan", "exists")), True),
    (
        both(
            "or",
            both("and", rule("contact.first_name", "eq", "Ada"), rule("event.seats", "gt", 9)),
            both("and", rule("event.meta.source", "eq", "ads"), rule("event.note", "is_empty")),
        ),
        True,
    ),
]


@pytest.mark.parametrize(("condition", "expected"), HOLDS)
def test_holds(condition: dict[str, Any], expected: bool) -> None:
    assert holds(condition, DATA) is expected


@pytest.mark.parametrize(
    "data", [{}, {"event": None, "contact": None}, {"event": {}}, {"contact": {"x": 1}}]
)
def test_holds_on_missing_data(data: dict[str, Any]) -> None:
    assert holds(rule("event.plan", "eq", "pro"), data) is False
    assert holds(rule("event.plan", "is_empty"), data) is True
    assert holds(rule("contact.email", "exists"), data) is False


def test_a_unary_rule_ignores_its_value() -> None:
    assert holds(rule("event.plan", "exists", "anything"), DATA) is True


@pytest.mark.parametrize(
    ("condition", "logic"),
    [
        (rule("event.plan", "eq", "pro"), {"==": [{"var": ["event.plan", None]}, "pro"]}),
        (rule("event.n", "neq", 1), {"!=": [{"var": ["event.n", None]}, 1]}),
        (rule("event.n", "gte", 1), {">=": [{"var": ["event.n", None]}, 1]}),
        (
            rule("contact.email", "ends_with", "@x"),
            {"ends_with": [{"var": ["contact.email", None]}, "@x"]},
        ),
        (rule("event.plan", "exists"), {"exists": [{"var": ["event.plan", None]}]}),
        (
            both("or", rule("event.a", "lt", 1), rule("event.b", "is_empty")),
            {
                "or": [
                    {"<": [{"var": ["event.a", None]}, 1]},
                    {"is_empty": [{"var": ["event.b", None]}]},
                ]
            },
        ),
    ],
)
def test_rules_compile_to_json_logic(condition: dict[str, Any], logic: dict[str, Any]) -> None:
    assert to_json_logic(parse_rule(condition)) == logic


@pytest.mark.parametrize(
    ("condition", "where"),
    [
        (rule("plan", "eq", "pro"), "field"),
        (rule("payload.plan", "eq", "pro"), "field"),
        (rule("event", "eq", "pro"), "field"),
        (rule("event.plan", "matches", "p.*"), "operator"),
        (rule("event.plan", "eq", {"var": "contact.plan"}), "value"),
        (rule("event.plan", "eq", [{"a": 1}]), "value"),
        (rule("event.plan", "eq", "pro") | {"colour": "red"}, "colour"),
        ({"type": "rule", "operator": "eq"}, "field"),
        ({"type": "and", "rules": []}, "rules"),
        ({"type": "and"}, "rules"),
        ({"type": "xor", "rules": [rule("event.a", "exists")]}, "type"),
        ({"field": "event.a", "operator": "exists"}, "type"),
        ("event.plan == 'pro'", ""),
    ],
)
def test_malformed_rules_are_refused(condition: object, where: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rule(condition)
    assert where in str(caught.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("literal", "literal"),
        (42, 42),
        (None, None),
        (True, True),
        (["a", {"var": "event.plan"}], ["a", {"var": "event.plan"}]),  # only a whole value is read
        ({"var": "event.plan"}, "pro"),
        ({"var": "event.meta.depth.level"}, 2),
        ({"var": "event.tags"}, ["beta", "eu"]),
        ({"var": "contact.first_name"}, "Ada"),
        ({"var": "contact.properties.company"}, "Analytical Engines"),
        ({"var": "event.missing"}, None),
        ({"var": "event.plan.deeper"}, None),
        ({"var": "elsewhere.plan"}, None),
        ({"var": 3}, {"var": 3}),  # not a reference: a literal object
        ({"var": "event.plan", "default": 1}, {"var": "event.plan", "default": 1}),
        ({"name": "x"}, {"name": "x"}),
    ],
)
def test_resolve_value(value: object, expected: object) -> None:
    assert resolve_value(value, DATA) == expected


def test_resolve_value_on_missing_data() -> None:
    assert resolve_value({"var": "event.plan"}, {}) is None
    assert resolve_value({"var": "contact.email"}, {"contact": None}) is None
