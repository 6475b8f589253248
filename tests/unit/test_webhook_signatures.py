"""The signature headers of a delivery: spec §6.2's and Standard Webhooks', one secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook

from mailbridge import webhooks
from mailbridge.clock import FakeClock
from mailbridge.services.webhooks._signatures import delivery_headers, standard_key
from mailbridge.services.webhooks._subscriptions import new_secret

BODY = '{"type":"contact.created","created_at":"2026-11-28T04:00:00.000Z","data":{}}'
STAMP = 1_795_665_600  # 2026-11-28T00:00:00Z


def standard_signature(key: bytes, event_id: str, timestamp: int, body: str) -> str:
    mac = hmac.new(key, f"{event_id}.{timestamp}.{body}".encode(), hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def test_a_new_secret_is_standard_base64_of_24_bytes() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_") and len(secret) == 6 + 32
    assert standard_key(secret) == base64.b64decode(secret[6:]) and len(standard_key(secret)) == 24


@pytest.mark.parametrize("made", ["now", "before"])
def test_one_secret_keys_both_signatures(made: str) -> None:
    # A secret made before Standard Webhooks headers was whsec_ + token_urlsafe(32).
    secret = new_secret() if made == "now" else "whsec_" + secrets.token_urlsafe(32)
    headers = delivery_headers(secret, None, STAMP, BODY, "evt-1")
    key = standard_key(secret)
    assert headers["webhook-id"] == headers["X-Service-Event-Id"] == "evt-1"
    assert headers["webhook-timestamp"] == headers["X-Service-Timestamp"] == str(STAMP)
    assert headers["webhook-signature"] == standard_signature(key, "evt-1", STAMP, BODY)
    assert headers["X-Service-Signature"] == webhooks.sign(secret, STAMP, BODY.encode())
    clock = FakeClock(datetime.fromtimestamp(STAMP + 60, UTC))
    assert webhooks.verify(secret, headers, BODY, clock=clock)["type"] == "contact.created"
    assert (
        Webhook(key).sign("evt-1", datetime.fromtimestamp(STAMP, UTC), BODY)
        == (headers["webhook-signature"])
    )


def test_old_form_secrets_all_sign_never_raise() -> None:
    for _ in range(2000):
        secret = "whsec_" + secrets.token_urlsafe(32)
        assert len(standard_key(secret)) == 32
        delivery_headers(secret, None, STAMP, BODY, "evt")


def test_a_previous_secret_signs_beside_the_current_one() -> None:
    current, previous = new_secret(), new_secret()
    headers = delivery_headers(current, previous, STAMP, BODY, "evt-2")
    assert headers["webhook-signature"].split(" ") == [
        standard_signature(standard_key(current), "evt-2", STAMP, BODY),
        standard_signature(standard_key(previous), "evt-2", STAMP, BODY),
    ]
    assert headers[webhooks.SIGNATURE_HEADER] == webhooks.sign(current, STAMP, BODY.encode())
    assert headers[webhooks.PREVIOUS_SIGNATURE_HEADER] == webhooks.sign(
        previous, STAMP, BODY.encode()
    )
