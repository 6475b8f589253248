"""The signature headers of one delivery: spec §6.2's and Standard Webhooks'.

One secret keys both. Spec §6.2 (``mailbridge.webhooks``): the hex HMAC-SHA256 of
``<timestamp>.<body>`` keyed with the secret's UTF-8 bytes, ``whsec_`` included, in
``X-Service-Signature``. Standard Webhooks (what Resend's SDKs' ``webhooks.verify``
and the ``standardwebhooks`` packages check): ``webhook-id`` (the event id, as
``X-Service-Event-Id``), ``webhook-timestamp`` and ``webhook-signature: v1,<base64>``,
the HMAC-SHA256 of ``<id>.<timestamp>.<body>`` keyed with the bytes the secret's
base64 after ``whsec_`` decodes to — signed here by the ``standardwebhooks`` package.

During a rotation's overlap the previous secret signs too: its spec signature in
``X-Service-Signature-Previous``, its Standard Webhooks one as a second entry of
``webhook-signature`` (the standard's list), so a receiver on either secret verifies.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from functools import lru_cache

from standardwebhooks import Webhook

from mailbridge.webhooks import PREVIOUS_SIGNATURE_HEADER, sign, signed_headers


def standard_key(secret: str) -> bytes:
    """The Standard Webhooks key of ``secret``: its base64 after ``whsec_``, decoded. A
    secret made before these headers (base64url, unpadded) gives its base64url bytes."""
    encoded = secret.removeprefix("whsec_")
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))


@lru_cache(maxsize=4096)
def _standard(secret: str) -> Webhook:
    return Webhook(standard_key(secret))  # the key decoded once a secret


def delivery_headers(
    secret: str, previous: str | None, timestamp: int, body: str, event_id: str
) -> dict[str, str]:
    raw = body.encode()
    headers = signed_headers(secret, timestamp, raw, event_id)
    when = datetime.fromtimestamp(timestamp, UTC)
    signatures = [_standard(secret).sign(event_id, when, body)]
    if previous is not None:
        headers[PREVIOUS_SIGNATURE_HEADER] = sign(previous, timestamp, raw)
        signatures.append(_standard(previous).sign(event_id, when, body))
    headers["webhook-id"] = event_id
    headers["webhook-timestamp"] = str(timestamp)
    headers["webhook-signature"] = " ".join(signatures)
    return headers
