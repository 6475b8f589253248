"""Webhook signatures (spec §6.2): how mailbridge signs a delivery, and how a receiver checks it.

Every delivery is a ``POST`` of ``{type, created_at, data}`` with three headers:

- ``X-Service-Timestamp``: when it was signed, in unix seconds;
- ``X-Service-Signature``: the hex HMAC-SHA256 of ``b"<timestamp>." + raw body``, keyed
  with the webhook's signing secret (its UTF-8 bytes, ``whsec_`` prefix included);
- ``X-Service-Event-Id``: the event's id, the same on every retry and replay of that
  event to that endpoint, so a receiver can drop repeats.

For a day after the secret is rotated, ``X-Service-Signature-Previous`` carries the
signature by the secret before it, so a receiver still holding that one verifies.
Deliveries also carry Standard Webhooks' ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature``, keyed by the same secret (README, "Verifying webhooks").

A receiver verifies the raw bytes it received, before parsing them::

    from mailbridge.webhooks import WebhookVerificationError, verify

    try:
        event = verify(secret, request.headers, raw_body)
    except WebhookVerificationError:
        ...  # answer 401
    ...  # act on event["type"], event["data"]; answer 2xx

This module needs nothing but the standard library and ``mailbridge.clock``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from mailbridge.clock import Clock, SystemClock
from mailbridge.errors import MailbridgeError

TIMESTAMP_HEADER = "X-Service-Timestamp"
SIGNATURE_HEADER = "X-Service-Signature"
EVENT_ID_HEADER = "X-Service-Event-Id"
PREVIOUS_SIGNATURE_HEADER = "X-Service-Signature-Previous"
DEFAULT_TOLERANCE = 300  # seconds a signature stays acceptable either side of now


class WebhookVerificationError(MailbridgeError):
    """The delivery is not signed with this secret, or it is too old (or too new)."""


def sign(secret: str, timestamp: int, raw_body: bytes) -> str:
    """The signature of ``raw_body`` signed at ``timestamp`` (unix seconds), as hex."""
    mac = hmac.new(secret.encode(), b"%d." % timestamp, hashlib.sha256)
    mac.update(raw_body)
    return mac.hexdigest()


def signed_headers(secret: str, timestamp: int, raw_body: bytes, event_id: str) -> dict[str, str]:
    """The three headers of a delivery."""
    return {
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, raw_body),
        EVENT_ID_HEADER: event_id,
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    raw_body: bytes | str,
    tolerance: int = DEFAULT_TOLERANCE,
    *,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """Check a delivery and return its parsed payload ``{type, created_at, data}``.

    ``headers`` may be any mapping (case is ignored); ``raw_body`` must be the bytes
    received, not JSON parsed and serialized again. Raises
    :class:`WebhookVerificationError` when a header is missing, the timestamp is more
    than ``tolerance`` seconds away from now (a replayed old delivery), or the
    signature does not match (compared in constant time).
    """
    body = raw_body.encode() if isinstance(raw_body, str) else bytes(raw_body)
    timestamp_text = _header(headers, TIMESTAMP_HEADER)
    signature = _header(headers, SIGNATURE_HEADER)
    if not timestamp_text or not signature:
        raise WebhookVerificationError(f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header")
    try:
        timestamp = int(timestamp_text.strip())
    except ValueError:
        raise WebhookVerificationError(f"{TIMESTAMP_HEADER} is not a number") from None
    now = (clock or SystemClock()).now().timestamp()
    if abs(now - timestamp) > tolerance:
        raise WebhookVerificationError(
            f"{TIMESTAMP_HEADER} is {now - timestamp:.0f} s away from now (tolerance {tolerance} s)"
        )
    expected = sign(secret, timestamp, body).encode()
    given = [signature, _header(headers, PREVIOUS_SIGNATURE_HEADER) or ""]
    if not any(hmac.compare_digest(expected, value.strip().lower().encode()) for value in given):
        raise WebhookVerificationError("the signature does not match")
    try:
        payload = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return payload


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, candidate in headers.items():
        if key.lower() == lowered:
            return candidate
    return None
