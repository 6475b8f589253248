"""The Resend SDK manages webhooks on a real `mailbridge serve`, whose runner then delivers a
signed event to a real receiver on loopback."""

from __future__ import annotations

import pytest
import resend

from mailbridge import webhooks
from tests.acceptance.conftest import Server
from tests.webhook_receiver import webhook_receiver


@pytest.fixture
def environment(environment: dict[str, str]) -> dict[str, str]:
    return {**environment, "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true"}


def test_sdk_manages_webhooks_and_serve_delivers_signed_events(sdk: Server) -> None:
    with webhook_receiver() as receiver:
        created = resend.Webhooks.create(
            {"endpoint": receiver.url(), "events": ["contact.created", "contact.deleted"]}
        )
        secret = created["signing_secret"]
        assert created["id"].isdigit() and secret.startswith("whsec_")
        listed = resend.Webhooks.list()
        assert [item["id"] for item in listed["data"]] == [created["id"]]
        fetched = resend.Webhooks.get(created["id"])
        assert fetched["status"] == "enabled" and "signing_secret" not in fetched
        resend.Webhooks.update({"webhook_id": created["id"], "events": ["contact.created"]})
        assert resend.Webhooks.get(created["id"])["events"] == ["contact.created"]

        contact = resend.Contacts.create({"email": "hooked@shop.io"})
        [request] = receiver.wait_for(1)
        assert request.signed_with(secret)
        event = webhooks.verify(secret, request.headers, request.body)
        assert event["type"] == "contact.created" and event["data"]["id"] == contact["id"]

        removed = resend.Webhooks.remove(created["id"])
        assert (removed["object"], removed["id"], removed["deleted"]) == (
            "webhook",
            created["id"],
            True,
        )
        with pytest.raises(resend.exceptions.ResendError) as missing:
            resend.Webhooks.get(created["id"])
        assert missing.value.code == 404
    assert sdk.stop() == 0
