"""The Resend SDK reads a webhook's events and their attempts on `mailbridge serve`, and
replays one: the runner delivers it again, with the same event id."""

from __future__ import annotations

import time
from typing import Any

import pytest
import resend

from tests.acceptance.conftest import Server
from tests.webhook_receiver import webhook_receiver


@pytest.fixture
def environment(environment: dict[str, str]) -> dict[str, str]:
    return {**environment, "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true"}


def test_sdk_lists_events_and_attempts_and_replays_an_event(sdk: Server) -> None:
    with webhook_receiver() as receiver:
        receiver.answer(503)  # the first attempt fails; the retry 5 s later succeeds
        created = resend.Webhooks.create(
            {"endpoint": receiver.url(), "events": ["contact.created"]}
        )
        resend.Contacts.create({"email": "ann@shop.io"})
        first, retry = receiver.wait_for(2)
        assert retry.event_id == first.event_id

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the success is recorded a moment after it
            listed = resend.Webhooks.list_events(created["id"])
            if listed["data"] and listed["data"][0]["status"] == "success":
                break
            time.sleep(0.1)
        [event] = listed["data"]
        assert event["id"] == first.event_id and event["type"] == "contact.created"
        assert event["status"] == "success"
        got: dict[str, Any] = dict(resend.Webhooks.get_event(created["id"], event["id"]))
        assert got["object"] == "webhook_event" and got["payload"]["data"]["email"] == "ann@shop.io"
        attempts = resend.Webhooks.list_event_attempts(created["id"], event["id"])["data"]
        assert [a["http_status_code"] for a in attempts] == [200, 503]

        replayed = resend.Webhooks.replay_event(created["id"], event["id"])
        assert replayed["object"] == "webhook_event" and replayed["id"] == event["id"]
        *_, again = receiver.wait_for(3)
        assert again.event_id == event["id"] and again.body == first.body
    assert sdk.stop() == 0
