"""The Resend SDK sends, batch-sends, gets, reschedules and cancels email on `mailbridge serve`."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import resend
import resend.exceptions

from tests.acceptance.conftest import Server, admin


@pytest.fixture
def sender(sdk: Server) -> Server:
    admin("domains", "add", "shop.io", "--verified", env=sdk.env)
    return sdk


def test_sdk_sends_gets_reschedules_and_cancels(sender: Server) -> None:
    sent = resend.Emails.send({
        "from": "Shop <news@shop.io>", "to": ["ann@corp.io"], "subject": "Hello",
        "html": "<p>Hi Ann</p>", "tags": [{"name": "kind", "value": "welcome"}],
    })  # fmt: skip
    assert set(sent) - {"http_headers"} == {"id"}
    fetched: dict[str, Any] = dict(resend.Emails.get(sent["id"]))
    assert fetched["object"] == "email" and fetched["to"] == ["ann@corp.io"]
    assert fetched["subject"] == "Hello" and fetched["last_event"] in {
        "queued",
        "sent",
        "delivered",
    }

    scheduled = resend.Emails.send({
        "from": "news@shop.io", "to": ["bob@corp.io"], "subject": "Later", "text": "Soon",
        "scheduled_at": "in 1 hour",
    })  # fmt: skip
    moved = resend.Emails.update({"id": scheduled["id"], "scheduled_at": "in 2 days"})
    assert moved["id"] == scheduled["id"] and moved["object"] == "email"
    canceled = resend.Emails.cancel(scheduled["id"])
    assert canceled["id"] == scheduled["id"]
    assert dict(resend.Emails.get(scheduled["id"]))["last_event"] == "canceled"
    with pytest.raises(resend.exceptions.ResendError) as again:
        resend.Emails.cancel(scheduled["id"])
    assert again.value.code == 422

    batch = resend.Batch.send([
        {"from": "news@shop.io", "to": [f"u{i}@corp.io"], "subject": "Batch", "text": "x"}
        for i in range(3)
    ])  # fmt: skip
    ids = [item["id"] for item in batch["data"]]
    assert len(set(ids)) == 3

    keyed = resend.Emails.send(
        {"from": "news@shop.io", "to": ["kim@corp.io"], "subject": "Once", "text": "x"},
        {"idempotency_key": "order-42"},
    )
    repeat = resend.Emails.send(
        {"from": "news@shop.io", "to": ["kim@corp.io"], "subject": "Once", "text": "x"},
        {"idempotency_key": "order-42"},
    )
    assert keyed["id"] == repeat["id"]
    assert sender.stop() == 0


def test_sdk_shares_an_email_and_reads_metrics(sender: Server) -> None:
    sent = resend.Emails.send({
        "from": "Shop <news@shop.io>", "to": ["ann@corp.io"], "subject": "Shared",
        "html": "<p>Look at this</p>",
    })  # fmt: skip
    shared = resend.Emails.share(sent["id"], {"expires_in": "1h 30m"})
    assert shared["object"] == "email" and shared["id"] == sent["id"]
    page = httpx.get(sender.base_url + urlsplit(shared["url"]).path)
    assert page.status_code == 200 and "Look at this" in page.text
    assert resend.Emails.share(sent["id"])["url"] != shared["url"]  # no params: 48 hours

    deadline = time.monotonic() + 60  # the runner sends it: a `sent` event to count
    while resend.Emails.get(sent["id"])["last_event"] == "queued":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    metrics = resend.Emails.metrics({
        "metrics": ["sent", "delivery_rate"], "dimensions": ["period", "email"],
        "granularity": "daily", "email_id": [sent["id"]], "timezone": "Europe/Berlin",
    })  # fmt: skip
    assert metrics["object"] == "metrics" and metrics["metrics"] == ["sent", "delivery_rate"]
    assert metrics["totals"]["sent"] == 1
    [row] = metrics["data"]
    assert row["email_id"] == sent["id"] and row["sent"] == 1 and row["period"]
    with pytest.raises(ValueError):  # the SDK's own check: broadcast with email
        resend.Emails.metrics({"dimensions": ["broadcast"], "email_id": [sent["id"]]})
    with pytest.raises(resend.exceptions.ResendError) as refused:
        resend.Emails.metrics({"granularity": "daily", "start_date": "not a date"})
    assert refused.value.code == 422


def test_sdk_receives_send_errors_as_typed_exceptions(sender: Server) -> None:
    with pytest.raises(resend.exceptions.ResendError) as bad_from:
        resend.Emails.send({"from": "nobody", "to": ["a@corp.io"], "subject": "x", "text": "x"})
    assert bad_from.value.code == 422 and bad_from.value.error_type == "invalid_from_address"
    with pytest.raises(resend.exceptions.MissingRequiredFieldsError):
        resend.Emails.send({"from": "news@shop.io", "subject": "x", "text": "x"})  # type: ignore[typeddict-item]
    with pytest.raises(resend.exceptions.ValidationError):
        resend.Emails.send({"from": "news@shop.io", "to": ["x@example.com"], "subject": "x",
                            "text": "x"})  # fmt: skip
    assert sender.stop() == 0


def test_quota_and_rate_limit_over_http(environment: dict[str, str], tmp_path: Any) -> None:
    """The free plan's daily quota and the per-IP limit, against the real server."""
    import httpx

    from tests.acceptance.conftest import start

    environment["MAILBRIDGE_SEND_RATE_LIMIT"] = "5/minute"
    admin("teams", "create", "--name", "solo", env=environment)
    admin("domains", "add", "shop.io", "--verified", env=environment)
    server = start("serve", environment, tmp_path / "serve.log")
    try:
        token = json.loads(admin("keys", "create", "--name", "k", env=environment).stdout)
        headers = {"Authorization": f"Bearer {token['token']}", "User-Agent": "acceptance"}
        body = {"from": "news@shop.io", "to": [f"u{i}@corp.io" for i in range(50)],
                "subject": "x", "text": "x"}  # fmt: skip
        codes = []
        for _ in range(6):
            response = httpx.post(f"{server.base_url}/emails", json=body, headers=headers)
            codes.append((response.status_code, response.json().get("name")))
            assert "ratelimit-limit" in response.headers
            time.sleep(0.01)
        assert codes[:2] == [(200, None), (200, None)]
        assert codes[2:5] == [(429, "daily_quota_exceeded")] * 3
        assert codes[5] == (429, "rate_limit_exceeded")
    finally:
        assert server.stop() == 0
