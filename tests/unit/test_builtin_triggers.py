"""Which engine events an activity row stands for (``mailbridge.triggers.activity``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mailbridge.engine import Event
from mailbridge.storage.tables import ActivityEvent
from mailbridge.triggers import events_of


def activity(type: str, data: dict[str, Any]) -> ActivityEvent:
    return ActivityEvent(team_id="t", type=type, data=data, created_at=datetime.now(UTC))


def test_a_contact_event_is_about_its_contact() -> None:
    data = {"id": "c1", "email": "ann@corp.io"}
    assert list(events_of(activity("contact.updated", data))) == [
        Event("t", "contact.updated", contact_id="c1", payload=data)
    ]


def test_an_email_event_is_about_each_recipient() -> None:
    data = {"email_id": "e1", "to": ["Ann@Corp.io", "bob@corp.io"]}
    assert [(e.name, e.email) for e in events_of(activity("email.opened", data))] == [
        ("email.opened", "ann@corp.io"),
        ("email.opened", "bob@corp.io"),
    ]


def test_run_and_domain_events_start_nothing() -> None:
    for type in ("automation.run.completed", "domain.updated", "template.created"):
        assert list(events_of(activity(type, {"id": "x"}))) == []
