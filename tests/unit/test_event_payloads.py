"""A sent event's payload against its definition's schema (no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from mailbridge.errors import ValidationError
from mailbridge.services.automations._event_definitions import (
    check_name,
    check_schema,
    payload_problems,
)

SCHEMA = {"plan": "string", "seats": "number", "trial": "boolean", "ends": "date"}


@pytest.mark.parametrize(
    "payload",
    [
        {},
        None,
        {"plan": "pro", "seats": 3, "trial": False, "ends": "2026-12-01"},
        {"seats": 2.5, "ends": "2026-12-01T10:00:00Z"},
        {"ends": "2026-12-01T10:00:00.123+02:00"},
        {"plan": None},  # null is absent
    ],
)
def test_payloads_that_fit(payload: Any) -> None:
    assert payload_problems(SCHEMA, payload) == []


@pytest.mark.parametrize(
    ("payload", "problems"),
    [
        ({"plan": 3}, ["field plan must be a string"]),
        ({"seats": "3"}, ["field seats must be a number"]),
        ({"seats": True}, ["field seats must be a number"]),
        ({"seats": float("nan")}, ["field seats must be a number"]),
        ({"trial": "yes"}, ["field trial must be true or false"]),
        ({"ends": "next week"}, ["field ends must be an ISO 8601 date or date-time string"]),
        ({"ends": 20261201}, ["field ends must be an ISO 8601 date or date-time string"]),
        ({"coupon": "X"}, ["unknown field coupon"]),
        (
            {"plan": 1, "coupon": "X", "seats": 2},
            ["field plan must be a string", "unknown field coupon"],
        ),
        ([1, 2], ["`payload` must be an object"]),
    ],
)
def test_payloads_that_do_not(payload: Any, problems: list[str]) -> None:
    assert payload_problems(SCHEMA, payload) == problems


def test_without_a_schema_any_object_fits() -> None:
    assert payload_problems(None, {"anything": [1, {"x": 2}]}) == []
    assert payload_problems({}, {"anything": 1}) == []
    assert payload_problems(None, "text") == ["`payload` must be an object"]


def test_names_and_schemas() -> None:
    assert check_name("user.signed_up") == "user.signed_up"
    assert check_name("Email-Sent") == "Email-Sent"  # only the dotted built-in prefixes
    for bad in ("email.opened", "AUTOMATION.x", "a b", ""):
        with pytest.raises(ValidationError):
            check_name(bad)
    assert check_schema({}) is None
    assert check_schema({"a-b_1": "date"}) == {"a-b_1": "date"}
