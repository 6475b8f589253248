"""The pure rules of contacts: addresses, property values, filters, changes, batches."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mailbridge.errors import ContactsTimeout, ValidationError
from mailbridge.services.audiences._audiences import default_audience_id
from mailbridge.services.audiences._contact_batch import MAX_PROBLEMS_TOLD, prepare_batch
from mailbridge.services.audiences._contact_filters import ContactFilters
from mailbridge.services.audiences._contact_lock import time_bound
from mailbridge.services.audiences._contacts import (
    ContactChanges,
    NewContact,
    apply_changes,
    new_contact_row,
    normalize_email,
    property_views,
)
from mailbridge.services.audiences._properties import (
    check_contact_properties,
    check_key,
    check_type,
    check_value,
)
from mailbridge.storage.tables import ContactProperty

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REGISTRY = {
    "plan": ContactProperty(key="plan", type="string"),
    "seats": ContactProperty(key="seats", type="number"),
    "beta": ContactProperty(key="beta", type="boolean"),
    "since": ContactProperty(key="since", type="date"),
}


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("Ann@Mail.NET", "ann@mail.net"),
        ("  bob+news@corp.io ", "bob+news@corp.io"),
        ("Zoë@exämple.de", "zoë@exämple.de"),
    ],
)
def test_addresses_are_stored_lower_case(raw: str, stored: str) -> None:
    assert normalize_email(raw) == stored


@pytest.mark.parametrize("raw", ["", "ann", "ann@", "@mail.net", "a@b", "a b@mail.net", "a@@b.io"])
def test_invalid_addresses_are_refused_naming_the_field(raw: str) -> None:
    with pytest.raises(ValidationError, match=r"`contacts\[2\]\.email`"):
        normalize_email(raw, "contacts[2].email")


@pytest.mark.parametrize("key", ["plan", "Plan_2", "_", "a" * 50])
def test_valid_keys(key: str) -> None:
    assert check_key(key) == key


@pytest.mark.parametrize(
    "key", ["", "a" * 51, "with space", "dash-ed", "é", "email", "Unsubscribed"]
)
def test_invalid_keys(key: str) -> None:
    with pytest.raises(ValidationError):
        check_key(key)


def test_types() -> None:
    assert [check_type(t) for t in ("string", "number", "boolean", "date")]
    with pytest.raises(ValidationError):
        check_type("int")


@pytest.mark.parametrize(
    ("kind", "value", "stored"),
    [
        ("string", "pro", "pro"),
        ("string", "", ""),
        ("number", 3, 3),
        ("number", -2.5, -2.5),
        ("boolean", False, False),
        ("date", "2026-02-03", "2026-02-03"),
        ("date", "2026-02-03T04:05:06Z", "2026-02-03T04:05:06.000Z"),
        ("date", "2026-02-03T04:05:06.789+02:00", "2026-02-03T02:05:06.789Z"),
        ("date", "2026-02-03T04:05", "2026-02-03T04:05:00.000Z"),
    ],
)
def test_values_are_checked_and_normalized(kind: str, value: Any, stored: Any) -> None:
    assert check_value(kind, value, "properties.x") == stored


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("string", 1),
        ("string", "x" * 2001),
        ("number", "1"),
        ("number", True),
        ("number", float("nan")),
        ("number", float("inf")),
        ("boolean", 0),
        ("boolean", "false"),
        ("date", "yesterday"),
        ("date", "2026-13-01"),
        ("date", 1767225600),
    ],
)
def test_values_of_the_wrong_type_are_refused(kind: str, value: Any) -> None:
    with pytest.raises(ValidationError, match=r"`properties\.x`"):
        check_value(kind, value, "properties.x")


def test_contact_properties_against_the_registry() -> None:
    checked = check_contact_properties(
        {"plan": "pro", "seats": 4, "beta": None, "since": "2026-01-05"}, REGISTRY
    )
    assert checked == {"plan": "pro", "seats": 4, "beta": None, "since": "2026-01-05"}
    with pytest.raises(ValidationError, match=r"`properties\.color` is not a registered"):
        check_contact_properties({"color": "red"}, REGISTRY)
    with pytest.raises(ValidationError, match=r"`item\.seats` must be a number"):
        check_contact_properties({"seats": "4"}, REGISTRY, "item")


def test_filters_parse() -> None:
    filters = ContactFilters.parse(
        email=" Ann@Mail.net ",
        email_contains="MAIL",
        unsubscribed="TRUE",
        created_after="2026-01-01T00:00:00Z",
        created_before="2026-02-01",
    )
    assert filters.email == "ann@mail.net" and filters.email_contains == "mail"
    assert filters.unsubscribed is True
    assert filters.created_after == datetime(2026, 1, 1, tzinfo=UTC)
    assert filters.created_before == datetime(2026, 2, 1, tzinfo=UTC)
    assert ContactFilters.parse(unsubscribed="false").unsubscribed is False
    assert ContactFilters.parse() == ContactFilters()
    for bad in [{"unsubscribed": "yes"}, {"created_after": "soon"}, {"created_before": "1/2/3"}]:
        with pytest.raises(ValidationError):
            ContactFilters.parse(**bad)


def _contact(**fields: Any) -> Any:
    base = NewContact(email="a@mail.net", first_name="Ann", properties={"plan": "free"})
    contact = new_contact_row("team", "audience", "a@mail.net", base, {"plan": "free"}, NOW)
    for name, value in fields.items():
        setattr(contact, name, value)
    return contact


def test_changes_apply_only_what_the_write_set() -> None:
    contact = _contact()
    later = NOW + timedelta(minutes=1)
    changes = ContactChanges.model_validate(
        {"last_name": "Lee", "unsubscribed": None, "properties": {"plan": None, "seats": 2}}
    )
    changed = apply_changes(contact, changes, {"plan": None, "seats": 2}, later)
    assert changed == {
        "last_name": {"old": None, "new": "Lee"},
        "properties": {"old": {"plan": "free"}, "new": {"seats": 2}},
    }
    assert (contact.first_name, contact.last_name, contact.unsubscribed) == ("Ann", "Lee", False)
    assert contact.updated_at == later


def test_null_clears_a_name_and_no_change_keeps_updated_at() -> None:
    contact = _contact()
    cleared = apply_changes(contact, ContactChanges.model_validate({"first_name": None}), {}, NOW)
    assert cleared == {"first_name": {"old": "Ann", "new": None}}
    same = ContactChanges.model_validate({"first_name": None, "properties": {"plan": "free"}})
    later = NOW + timedelta(hours=1)
    assert apply_changes(contact, same, {"plan": "free"}, later) == {}
    assert contact.updated_at == NOW


def test_new_rows_drop_null_properties_and_default_to_subscribed() -> None:
    fields = NewContact(email="b@mail.net")
    row = new_contact_row("t", "a", "b@mail.net", fields, {"plan": "x", "seats": None}, NOW)
    assert row.properties == {"plan": "x"} and row.unsubscribed is False
    assert uuid.UUID(row.id).version == 7


def test_batches_are_checked_whole() -> None:
    items = [
        NewContact(email="A@mail.net", properties={"seats": 1}),
        NewContact(email="b@mail.net"),
    ]
    prepared = prepare_batch(items, REGISTRY)
    assert [(p.email, dict(p.properties)) for p in prepared] == [
        ("a@mail.net", {"seats": 1}),
        ("b@mail.net", {}),
    ]
    bad = [
        NewContact(email="a@mail.net"),
        NewContact(email="nope"),
        NewContact(email="c@mail.net", properties={"seats": "x"}),
        NewContact(email="A@MAIL.NET"),
    ]
    with pytest.raises(ValidationError) as refused:
        prepare_batch(bad, REGISTRY)
    message = refused.value.message
    assert "3 invalid item(s)" in message
    assert "contacts[1].email" in message
    assert "contacts[2].properties.seats" in message
    assert "`contacts[3].email` repeats contacts[0]" in message


def test_batch_bounds_and_long_reports() -> None:
    with pytest.raises(ValidationError):
        prepare_batch([], REGISTRY)
    with pytest.raises(ValidationError):
        prepare_batch([NewContact(email=f"p{n}@mail.net") for n in range(1001)], REGISTRY)
    many = [NewContact(email=f"bad{n}") for n in range(MAX_PROBLEMS_TOLD + 5)]
    with pytest.raises(ValidationError, match="and 5 more"):
        prepare_batch(many, REGISTRY)


def test_default_audience_ids_are_stable_per_team() -> None:
    team, other = str(uuid.uuid4()), str(uuid.uuid4())
    assert default_audience_id(team) == default_audience_id(team)
    assert default_audience_id(team) != default_audience_id(other)
    assert uuid.UUID(default_audience_id(team)).version == 5


class _RecordingSession:
    def __init__(self) -> None:
        self.rolled_back = 0

    async def rollback(self) -> None:
        self.rolled_back += 1


async def test_time_bound_rolls_back_and_reports_contacts_timeout() -> None:
    session: Any = _RecordingSession()
    with pytest.raises(ContactsTimeout) as late:
        async with time_bound(session, 0.01):
            await asyncio.sleep(1)
    assert session.rolled_back == 1
    assert late.value.headers["retry-after"] == "1"
    async with time_bound(session, 1):
        await asyncio.sleep(0)
    async with time_bound(session, None):
        await asyncio.sleep(0.02)
    assert session.rolled_back == 1


def test_property_views_take_the_registered_type_or_read_it_off_the_value() -> None:
    stored = {"plan": "2026-01-05", "seats": 2, "beta": True, "since": "2026-01-05", "gone": "x"}
    assert property_views(stored, REGISTRY) == {
        "plan": {"value": "2026-01-05", "type": "string"},
        "seats": {"value": 2, "type": "number"},
        "beta": {"value": True, "type": "boolean"},
        "since": {"value": "2026-01-05", "type": "date"},
    }
    inferred = property_views(
        {"a": "x", "b": 1.5, "c": False, "d": "2026-01-05T00:00:00.000Z", "e": "2026-01-05 10:00"}
    )
    assert {key: item["type"] for key, item in inferred.items()} == {
        "a": "string", "b": "number", "c": "boolean", "d": "date", "e": "string"
    }  # fmt: skip
