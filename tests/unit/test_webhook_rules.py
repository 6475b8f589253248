"""Webhook rules that need no I/O: signatures and their verification, the retry schedule,
the body sent, event names, ids, and one attempt against httpx's MockTransport."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from mailbridge.clock import FakeClock
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.webhooks._deliveries import WEBHOOK_RETRY_POLICY, ClaimedDelivery
from mailbridge.services.webhooks._fanout import event_body
from mailbridge.services.webhooks._sender import WebhookSender
from mailbridge.services.webhooks._subscriptions import check_events, new_secret, parse_id
from mailbridge.storage.tables import ActivityEvent
from mailbridge.webhooks import WebhookVerificationError, sign, signed_headers, verify

SECRET = "whsec_test-secret"
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
BODY = b'{"type":"email.delivered","created_at":"2026-05-01T12:00:00.000Z","data":{"a":"\xc3\xa9"}}'


def test_the_signature_is_hex_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), b"1777636800." + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, 1777636800, BODY) == expected
    headers = signed_headers(SECRET, 1777636800, BODY, "evt-1")
    assert headers == {
        "X-Service-Timestamp": "1777636800",
        "X-Service-Signature": expected,
        "X-Service-Event-Id": "evt-1",
    }


def test_verify_returns_the_payload_of_a_good_delivery() -> None:
    clock = FakeClock(NOW)
    timestamp = int(NOW.timestamp())
    headers = signed_headers(SECRET, timestamp, BODY, "evt-1")
    assert verify(SECRET, headers, BODY, clock=clock)["data"] == {"a": "é"}
    # Header names in any case (a dict from a framework that lower-cases them), a str body.
    lowered = {name.lower(): value for name, value in headers.items()}
    assert verify(SECRET, lowered, BODY.decode(), clock=clock)["type"] == "email.delivered"
    # An upper-case hex digest is the same digest.
    upper = {**headers, "X-Service-Signature": headers["X-Service-Signature"].upper()}
    assert verify(SECRET, upper, BODY, clock=clock)["type"] == "email.delivered"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"X-Service-Signature": "0" * 64}, "does not match"),
        ({"X-Service-Timestamp": "1777636801"}, "does not match"),
        ({"X-Service-Timestamp": "soon"}, "not a number"),
        ({"X-Service-Signature": None}, "missing"),
        ({"X-Service-Timestamp": None}, "missing"),
    ],
)
def test_verify_refuses_tampered_or_incomplete_headers(
    change: dict[str, str | None], message: str
) -> None:
    clock = FakeClock(NOW)
    headers: dict[str, str] = signed_headers(SECRET, int(NOW.timestamp()), BODY, "evt-1")
    for name, value in change.items():
        if value is None:
            del headers[name]
        else:
            headers[name] = value
    with pytest.raises(WebhookVerificationError, match=message):
        verify(SECRET, headers, BODY, clock=clock)


def test_verify_refuses_another_body_another_secret_and_stale_timestamps() -> None:
    clock = FakeClock(NOW)
    timestamp = int(NOW.timestamp())
    headers = signed_headers(SECRET, timestamp, BODY, "evt-1")
    with pytest.raises(WebhookVerificationError):
        verify(SECRET, headers, BODY.replace(b"delivered", b"bounced"), clock=clock)
    with pytest.raises(WebhookVerificationError):
        verify(SECRET + "x", headers, BODY, clock=clock)
    # Re-serialized JSON is not the raw body.
    with pytest.raises(WebhookVerificationError):
        verify(SECRET, headers, json.dumps(json.loads(BODY)), clock=clock)
    clock.advance(301)
    with pytest.raises(WebhookVerificationError, match="tolerance"):
        verify(SECRET, headers, BODY, clock=clock)
    assert verify(SECRET, headers, BODY, tolerance=400, clock=clock)["type"] == "email.delivered"
    early = FakeClock(NOW - timedelta(seconds=301))
    with pytest.raises(WebhookVerificationError, match="tolerance"):
        verify(SECRET, headers, BODY, clock=early)


def test_verify_refuses_a_body_that_is_not_a_json_object() -> None:
    clock = FakeClock(NOW)
    for body in (b"[1, 2]", b"not json"):
        headers = signed_headers(SECRET, int(NOW.timestamp()), body, "evt-1")
        with pytest.raises(WebhookVerificationError):
            verify(SECRET, headers, body, clock=clock)


def test_the_retry_schedule() -> None:
    delays = [WEBHOOK_RETRY_POLICY.delay_after(n) for n in range(1, 9)]
    assert delays == [
        timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
        timedelta(hours=5), timedelta(hours=10), timedelta(hours=10), None,
    ]  # fmt: skip


def test_the_body_is_type_created_at_and_data() -> None:
    event = ActivityEvent(
        id="e1", team_id="t1", type="contact.created", data={"email": "zoë@corp.io"},
        created_at=NOW,
    )  # fmt: skip
    body = event_body(event)
    assert json.loads(body) == {
        "type": "contact.created",
        "created_at": "2026-05-01T12:00:00.000Z",
        "data": {"email": "zoë@corp.io"},
    }
    assert " " not in body  # compact: the bytes sent are the bytes signed


def test_event_names_and_ids() -> None:
    assert check_events(["email.sent", "email.sent", "contact.deleted"]) == [
        "email.sent",
        "contact.deleted",
    ]
    with pytest.raises(ValidationError, match=r"email\.nope"):
        check_events(["email.nope"])
    with pytest.raises(ValidationError):
        check_events([])
    assert parse_id("42") == 42
    for bad in ("", "x1", "-3", "4.2", "2147483648", "00000000000"):
        with pytest.raises(NotFound):
            parse_id(bad)
    assert new_secret().startswith("whsec_") and new_secret() != new_secret()


def _delivery(endpoint: str, enabled: bool = True) -> ClaimedDelivery:
    return ClaimedDelivery(
        id="d1", webhook_id=1, event_id="evt-1", event_type="email.delivered",
        body=BODY.decode(), attempts=1, attempt_log=[], endpoint=endpoint, secret=SECRET,
        webhook_enabled=enabled,
    )  # fmt: skip


async def test_an_attempt_posts_the_signed_body_to_the_pinned_address() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202)

    clock = FakeClock(NOW)
    sender = WebhookSender(httpx.MockTransport(handler), clock, timeout=5, allow_private=True)
    outcome = await sender.attempt(_delivery("http://127.0.0.1:8080/in?x=1"))
    assert outcome.succeeded and outcome.status_code == 202 and outcome.error is None
    [request] = seen
    assert request.method == "POST" and str(request.url) == "http://127.0.0.1:8080/in?x=1"
    assert request.content == BODY
    assert request.headers["x-service-event-id"] == "evt-1"
    assert request.headers["content-type"] == "application/json"
    assert verify(SECRET, request.headers, request.content, clock=clock)["data"] == {"a": "é"}


@pytest.mark.parametrize(
    ("endpoint", "answer", "error"),
    [
        ("http://127.0.0.1/", httpx.Response(302, headers={"location": "/x"}), "answered 302"),
        ("http://127.0.0.1/", httpx.Response(410, text="gone " * 100), "answered 410: gone"),
        ("http://10.0.0.8/", httpx.Response(200), "non-public address 10.0.0.8"),
        ("http://127.0.0.1/", httpx.ConnectError("refused"), "ConnectError: refused"),
    ],
)
async def test_anything_but_a_2xx_is_a_failure(
    endpoint: str, answer: httpx.Response | Exception, error: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(answer, Exception):
            raise answer
        return answer

    allow_private = "127.0.0.1" in endpoint
    sender = WebhookSender(
        httpx.MockTransport(handler), FakeClock(NOW), timeout=5, allow_private=allow_private
    )
    outcome = await sender.attempt(_delivery(endpoint))
    assert not outcome.succeeded
    assert outcome.error is not None and error in outcome.error
    assert len(outcome.error) < 250


async def test_a_disabled_webhook_is_not_attempted() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("nothing should be sent")

    sender = WebhookSender(
        httpx.MockTransport(handler), FakeClock(NOW), timeout=5, allow_private=True
    )
    outcome = await sender.attempt(_delivery("http://127.0.0.1/", enabled=False))
    assert outcome.error == "webhook disabled" and not outcome.succeeded
