"""Condition rules (DESIGN §4), compiled to JSON Logic and evaluated with ``jsonlogic``.

A rule is ``{type: "rule", field, operator, value}`` or ``{type: "and" | "or", rules}``;
fields live under ``event.`` (the payload of the event that started or last resumed
the run) or ``contact.``. The library knows ``var``, comparisons and equality; ``and``,
``or``, the string operators, ``exists`` and ``is_empty`` are registered on a copy of
its registry, and the ordering comparisons are replaced by ones where a missing or
mismatched value is simply false. A missing field is *absent*, never an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal, Self

from jsonlogic import JSONLogicExpression, Operator
from jsonlogic.evaluation import EvaluationContext, EvaluationSettings, get_value
from jsonlogic.operators import operator_registry
from jsonlogic.resolving import DotReferenceParser, ParsedReference
from jsonlogic.utils import DataStack
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

OPERATORS = (
    "eq", "neq", "gt", "gte", "lt", "lte",
    "contains", "starts_with", "ends_with", "exists", "is_empty",
)  # fmt: skip
UNARY = ("exists", "is_empty")
FIELD_ROOTS = ("event", "contact")


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["rule"]
    field: str
    operator: Literal[
        "eq", "neq", "gt", "gte", "lt", "lte",
        "contains", "starts_with", "ends_with", "exists", "is_empty",
    ]  # fmt: skip
    value: Any = None

    @field_validator("field")
    @classmethod
    def _rooted(cls, field: str) -> str:
        root, _, rest = field.partition(".")
        if root not in FIELD_ROOTS or not rest:
            raise ValueError("a field starts with `event.` or `contact.`, e.g. `event.plan`")
        return field

    @field_validator("value")
    @classmethod
    def _plain(cls, value: Any) -> Any:
        # JSON Logic would read an object as an operator (and fail when the run evaluates it)
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, dict | list) for item in items):
            raise ValueError(
                "a rule compares with a string, number, boolean, null or a list of them"
            )
        return value


class RuleGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["and", "or"]
    rules: list[AnyRule] = Field(min_length=1)


# discriminated by `type`, so a bad rule gets one problem, not one per union member
AnyRule = Annotated[Rule | RuleGroup, Field(discriminator="type")]
_RULE = TypeAdapter[Rule | RuleGroup](AnyRule)


def parse_rule(data: object) -> Rule | RuleGroup:
    """The rule ``data`` describes; raises pydantic's ValidationError when malformed."""
    return _RULE.validate_python(data)


def to_json_logic(rule: Rule | RuleGroup) -> dict[str, Any]:
    if isinstance(rule, RuleGroup):
        return {rule.type: [to_json_logic(inner) for inner in rule.rules]}
    var = {"var": [rule.field, None]}
    if rule.operator in UNARY:
        return {rule.operator: [var]}
    symbol = {"eq": "==", "neq": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
    return {symbol.get(rule.operator, rule.operator): [var, rule.value]}


# -- operators the library lacks ------------------------------------------------------


@dataclass
class _Variadic(Operator):
    arguments: list[Any]

    @classmethod
    def from_expression(cls, operator: str, arguments: list[Any]) -> Self:
        return cls(operator=operator, arguments=arguments)


@dataclass
class _All(_Variadic):
    def evaluate(self, context: EvaluationContext) -> bool:
        return all(get_value(argument, context) for argument in self.arguments)


@dataclass
class _Any(_Variadic):
    def evaluate(self, context: EvaluationContext) -> bool:
        return any(get_value(argument, context) for argument in self.arguments)


@dataclass
class _Binary(Operator):
    left: Any
    right: Any

    @classmethod
    def from_expression(cls, operator: str, arguments: list[Any]) -> Self:
        return cls(operator=operator, left=arguments[0], right=arguments[1])

    def evaluate(self, context: EvaluationContext) -> bool:
        left, right = get_value(self.left, context), get_value(self.right, context)
        if left is None or right is None:
            return False
        try:
            return self.test(left, right)
        except TypeError:  # "abc" > 3: mismatched, so the rule does not hold
            return False

    def test(self, left: Any, right: Any) -> bool:
        raise NotImplementedError


@dataclass
class _Greater(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        return bool(left > right)


@dataclass
class _GreaterOrEqual(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        return bool(left >= right)


@dataclass
class _Less(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        return bool(left < right)


@dataclass
class _LessOrEqual(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        return bool(left <= right)


@dataclass
class _Contains(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        if isinstance(left, str):
            return str(right) in left
        return isinstance(left, list | dict) and right in left


@dataclass
class _StartsWith(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        return isinstance(left, str) and left.startswith(str(right))


@dataclass
class _EndsWith(_Binary):
    def test(self, left: Any, right: Any) -> bool:
        return isinstance(left, str) and left.endswith(str(right))


@dataclass
class _Unary(Operator):
    argument: Any

    @classmethod
    def from_expression(cls, operator: str, arguments: list[Any]) -> Self:
        return cls(operator=operator, argument=arguments[0])


@dataclass
class _Exists(_Unary):
    def evaluate(self, context: EvaluationContext) -> bool:
        return get_value(self.argument, context) is not None


@dataclass
class _IsEmpty(_Unary):
    def evaluate(self, context: EvaluationContext) -> bool:
        value = get_value(self.argument, context)
        return value is None or value in ("", [], {})


REGISTRY = operator_registry.copy(
    extend={
        "and": _All, "or": _Any, ">": _Greater, ">=": _GreaterOrEqual, "<": _Less,
        "<=": _LessOrEqual, "contains": _Contains, "starts_with": _StartsWith,
        "ends_with": _EndsWith, "exists": _Exists, "is_empty": _IsEmpty,
    },
    force=True,
)  # fmt: skip


class _CachedDotReferences(DotReferenceParser):
    """The dot notation, each reference parsed once: a graph's rules read the same few."""

    @lru_cache(maxsize=4096)  # noqa: B019 - one instance, alive as long as the module
    def __call__(self, reference: str) -> tuple[ParsedReference, int]:
        return super().__call__(reference)


_SETTINGS = EvaluationSettings(reference_parser=_CachedDotReferences())


class _Context(EvaluationContext):
    """An evaluation context on shared settings (the library builds them per call)."""

    def __init__(self, root_data: Any) -> None:
        self.data_stack = DataStack((root_data, None))
        self.settings = _SETTINGS


@lru_cache(maxsize=4096)
def _compiled(rule_json: str) -> Operator:
    expression = to_json_logic(parse_rule(json.loads(rule_json)))
    return JSONLogicExpression.from_json(expression).as_operator_tree(REGISTRY)


def _absent_safe(data: dict[str, Any]) -> dict[str, Any]:
    return {root: data.get(root) or {} for root in FIELD_ROOTS}


_BY_IDENTITY: dict[int, tuple[object, Operator]] = {}


def _operator(rule: object) -> Operator:
    # A graph's rules are objects that live as long as the graph (graphs are cached and
    # never change): compile each once, found by identity before any serializing.
    found = _BY_IDENTITY.get(id(rule))
    if found is not None and found[0] is rule:
        return found[1]
    operator = _compiled(json.dumps(rule, sort_keys=True, default=str))
    if len(_BY_IDENTITY) < 4096:
        _BY_IDENTITY[id(rule)] = (rule, operator)
    return operator


def holds(rule: object, data: dict[str, Any]) -> bool:
    """Whether ``rule`` (a rule in its JSON form) holds for ``{"event": ..., "contact": ...}``."""
    operator = _operator(rule)
    try:
        return bool(operator.evaluate(_Context(_absent_safe(data))))
    except (KeyError, IndexError, TypeError, AttributeError):  # a path through a non-object
        return False


def reads_contact(rule: object) -> bool:
    """Whether a rule (in its JSON form) reads a ``contact.*`` field."""
    if isinstance(rule, dict):
        if rule.get("type") == "rule":
            return str(rule.get("field", "")).startswith("contact.")
        return any(reads_contact(inner) for inner in rule.get("rules") or [])
    return False


def resolve_value(value: object, data: dict[str, Any]) -> Any:
    """A configured value: a literal, or ``{"var": "event.plan"}`` read from the run's data."""
    if isinstance(value, dict) and set(value) == {"var"} and isinstance(value["var"], str):
        node: Any = _absent_safe(data)
        for part in value["var"].split("."):
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return node
    return value
