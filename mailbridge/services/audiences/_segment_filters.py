"""Segment filters (spec §2.3, §4.9): their models, and their compilation to SQL.

Membership is always computed by the database: a filter compiles to one boolean SQL
expression over ``contacts`` (JSON property extraction portable across SQLite and
PostgreSQL), never by loading contacts into Python.

Property filters read a property's typed value; a contact without the property takes
the property's ``fallback_value``. ``neq`` and ``not_contains`` also match contacts
with no value at all ("plan is not pro" includes those with no plan); ``exists`` and
``not_exists`` look at the stored value only, never the fallback.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import (
    Boolean,
    ColumnElement,
    Float,
    String,
    and_,
    exists,
    false,
    func,
    literal,
    not_,
    or_,
    true,
)
from sqlalchemy.types import TypeEngine

from mailbridge.errors import ValidationError
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Contact, ContactEngagement, ContactProperty, SegmentMember
from mailbridge.wire import END, UUID_TEXT, declared

Status = Literal["all", "subscribed", "unsubscribed", "members_only"]
Operator = Literal[
    "eq", "neq", "gt", "gte", "lt", "lte", "contains", "not_contains",
    "starts_with", "ends_with", "exists", "not_exists", "in",
]  # fmt: skip
EngagementEvent = Literal["clicked", "not_clicked", "opened", "not_opened"]

ORDERED = {"gt", "gte", "lt", "lte"}
TEXTUAL = {"contains", "not_contains", "starts_with", "ends_with"}
PRESENCE = {"exists", "not_exists"}
OPERATORS_BY_TYPE: dict[str, set[str]] = {
    "string": {"eq", "neq", "in", *TEXTUAL, *PRESENCE},
    "number": {"eq", "neq", "in", *ORDERED, *PRESENCE},
    "date": {"eq", "neq", "in", *ORDERED, *PRESENCE},
    "boolean": {"eq", "neq", *PRESENCE},
}


class PropertyFilter(BaseModel):
    model_config = ConfigDict(extra="ignore")

    key: str = Field(min_length=1, max_length=50)
    operator: Operator
    value: Any = None


class Engagement(BaseModel):
    model_config = ConfigDict(extra="ignore")

    event: EngagementEvent
    campaign_id: str = declared(pattern=f"^{UUID_TEXT}{END}")  # what `is_uuid` takes

    @field_validator("campaign_id")
    @classmethod
    def _campaign_id_is_an_id(cls, value: str) -> str:
        if not is_uuid(value):
            raise ValueError("campaign_id must be a campaign id")
        return value


class SegmentFilter(BaseModel):
    model_config = ConfigDict(extra="ignore")

    status: Status = "all"
    email_contains: str | None = None
    property_filters: list[PropertyFilter] | None = None
    engagement: Engagement | None = None

    def stored(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "email_contains": self.email_contains,
            "property_filters": (
                [f.model_dump() for f in self.property_filters] if self.property_filters else None
            ),
            "engagement": self.engagement.model_dump() if self.engagement else None,
        }


def _typed_value(property_type: str, value: Any, key: str) -> Any:
    """A filter's comparison value, checked against the property's type."""
    problem = ValidationError(f"`property_filters` value for `{key}` must be a {property_type}.")
    if property_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise problem
        return float(value)
    if property_type == "boolean":
        if not isinstance(value, bool):
            raise problem
        return value
    if not isinstance(value, str):
        raise problem
    return value


def check_filter(segment_filter: SegmentFilter, properties: dict[str, ContactProperty]) -> None:
    """Raise 422 for keys that are not registered properties, or operators/values that misfit."""
    for item in segment_filter.property_filters or []:
        registered = properties.get(item.key)
        if registered is None:
            raise ValidationError(
                f"`property_filters` key `{item.key}` is not a registered contact property."
            )
        if item.operator not in OPERATORS_BY_TYPE[registered.type]:
            raise ValidationError(
                f"Operator `{item.operator}` does not apply to the {registered.type} "
                f"property `{item.key}`."
            )
        if item.operator in PRESENCE:
            continue
        if item.operator == "in":
            if not isinstance(item.value, list) or not item.value:
                raise ValidationError(f"Operator `in` on `{item.key}` needs a non-empty list.")
            for value in item.value:
                _typed_value(registered.type, value, item.key)
        else:
            _typed_value(registered.type, item.value, item.key)


def _extract(property_type: str, key: str) -> ColumnElement[Any]:
    element = Contact.properties[key]
    if property_type == "number":
        return typing.cast("ColumnElement[Any]", element.as_float())
    if property_type == "boolean":
        return typing.cast("ColumnElement[Any]", element.as_boolean())
    return typing.cast("ColumnElement[Any]", element.as_string())


def _fallback(prop: ContactProperty) -> ColumnElement[Any] | None:
    if prop.fallback_value is None:
        return None
    types: dict[str, TypeEngine[Any]] = {"number": Float(), "boolean": Boolean()}
    sql_type = types.get(prop.type, String())
    value = float(prop.fallback_value) if prop.type == "number" else prop.fallback_value
    return literal(value, sql_type)


def _property_condition(item: PropertyFilter, prop: ContactProperty) -> ColumnElement[bool]:
    stored = _extract(prop.type, item.key)
    if item.operator in PRESENCE:
        present = _extract("string", item.key).is_not(None)
        return present if item.operator == "exists" else not_(present)
    fallback = _fallback(prop)
    value = stored if fallback is None else func.coalesce(stored, fallback)
    if item.operator == "in":
        return value.in_([_typed_value(prop.type, v, item.key) for v in item.value])
    operand = _typed_value(prop.type, item.value, item.key)
    condition: Any
    match item.operator:
        case "eq":
            condition = value == operand
        case "neq":
            condition = or_(value.is_(None), value != operand)
        case "gt":
            condition = value > operand
        case "gte":
            condition = value >= operand
        case "lt":
            condition = value < operand
        case "lte":
            condition = value <= operand
        case "contains":
            condition = value.contains(operand, autoescape=True)
        case "not_contains":
            condition = or_(value.is_(None), not_(value.contains(operand, autoescape=True)))
        case "starts_with":
            condition = value.startswith(operand, autoescape=True)
        case "ends_with":
            condition = value.endswith(operand, autoescape=True)
        case _:
            raise AssertionError(item.operator)
    return typing.cast("ColumnElement[bool]", condition)


def _engagement_condition(engagement: Engagement) -> ColumnElement[bool]:
    kind = engagement.event.removeprefix("not_")
    engaged = exists().where(
        ContactEngagement.contact_id == Contact.id,
        ContactEngagement.campaign_id == engagement.campaign_id,
        ContactEngagement.kind == kind,
    )
    return not_(engaged) if engagement.event.startswith("not_") else engaged


def filter_condition(
    segment_filter: SegmentFilter, properties: dict[str, ContactProperty]
) -> ColumnElement[bool]:
    """The contacts a filter matches (without the explicit members)."""
    if segment_filter.status == "members_only":
        return false()
    conditions: list[ColumnElement[bool]] = []
    if segment_filter.status == "subscribed":
        conditions.append(Contact.unsubscribed.is_(False))
    elif segment_filter.status == "unsubscribed":
        conditions.append(Contact.unsubscribed.is_(True))
    if segment_filter.email_contains:
        needle = segment_filter.email_contains.lower()
        conditions.append(Contact.email.contains(needle, autoescape=True))
    conditions.extend(
        _property_condition(item, properties[item.key])
        for item in segment_filter.property_filters or []
    )
    if segment_filter.engagement is not None:
        conditions.append(_engagement_condition(segment_filter.engagement))
    return and_(true(), *conditions)


def membership_condition(
    segment_id: str,
    audience_id: str,
    segment_filter: SegmentFilter,
    properties: dict[str, ContactProperty],
) -> ColumnElement[bool]:
    """Contacts of the segment's audience that its filter matches or that were added by hand."""
    added = exists().where(
        SegmentMember.segment_id == segment_id, SegmentMember.contact_id == Contact.id
    )
    return and_(
        Contact.audience_id == audience_id,
        or_(filter_condition(segment_filter, properties), added),
    )
