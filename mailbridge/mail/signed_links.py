"""Links the service signs: the token scheme, and attachment download links.

A token is ``<payload>.<mac>``, both base64url without padding; the MAC is
HMAC-SHA256 (truncated to 128 bits) over a purpose name and the payload, keyed with
the instance secret (``services.instance``). The purpose keeps tokens of one kind
(an open pixel, a click, an unsubscribe, a download) from being replayed as another.
Everything here is pure: the secret and the time are handed in.

Every signed link lives under ``/t/``, the public part of the HTTP API, except the vote
links of polls (``/polls/vote/<token>``), whose path names what they do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import uuid
from datetime import UTC, datetime

LINK_PREFIX = "/t/"
DOWNLOAD_PATH = LINK_PREFIX + "a/"
VOTE_PATH = "/polls/vote/"
MAC_BYTES = 16


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, purpose: str, payload: bytes) -> bytes:
    message = purpose.encode() + b"\x00" + payload
    return hmac.new(secret, message, hashlib.sha256).digest()[:MAC_BYTES]


def sign(secret: bytes, purpose: str, payload: bytes) -> str:
    return f"{_encode(payload)}.{_encode(_mac(secret, purpose, payload))}"


def verify(secret: bytes, purpose: str, token: str) -> bytes | None:
    """The payload of a token signed for ``purpose`` with ``secret``; None for anything else."""
    encoded_payload, dot, encoded_mac = token.partition(".")
    if not dot:
        return None
    try:
        payload, mac = _decode(encoded_payload), _decode(encoded_mac)
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(mac, _mac(secret, purpose, payload)):
        return None
    return payload


def id_bytes(object_id: str) -> bytes:
    """An id as its 16 bytes (ids are UUIDs), which keeps links short."""
    return uuid.UUID(object_id).bytes


def id_from_bytes(data: bytes) -> str:
    return str(uuid.UUID(bytes=data[:16]))


def link(base_url: str, path: str, token: str) -> str:
    return f"{base_url.rstrip('/')}{path}{token}"


# Attachment downloads: the link carries the attachment id and when it stops working.

DOWNLOAD = "download"


def download_url(base_url: str, secret: bytes, attachment_id: str, expires_at: datetime) -> str:
    expiry = int(expires_at.timestamp()).to_bytes(8, "big")
    return link(base_url, DOWNLOAD_PATH, sign(secret, DOWNLOAD, id_bytes(attachment_id) + expiry))


def read_download_token(secret: bytes, token: str, now: datetime) -> str | None:
    """The attachment id of a valid, unexpired download token."""
    payload = verify(secret, DOWNLOAD, token)
    if payload is None or len(payload) != 24:
        return None
    expires_at = datetime.fromtimestamp(int.from_bytes(payload[16:], "big"), UTC)
    if now >= expires_at:
        return None
    return id_from_bytes(payload)


# Received mail: the original bytes of a received email, and its attachments.

RECEIVED_RAW = "received-raw"
RECEIVED_ATTACHMENT = "received-attachment"
RECEIVED_PATHS = {RECEIVED_RAW: LINK_PREFIX + "r/", RECEIVED_ATTACHMENT: LINK_PREFIX + "ra/"}


def received_url(
    base_url: str, secret: bytes, purpose: str, object_id: str, expires_at: datetime
) -> str:
    expiry = int(expires_at.timestamp()).to_bytes(8, "big")
    token = sign(secret, purpose, id_bytes(object_id) + expiry)
    return link(base_url, RECEIVED_PATHS[purpose], token)


def read_received_token(secret: bytes, purpose: str, token: str, now: datetime) -> str | None:
    """The object id of a valid, unexpired ``received_url`` token for ``purpose``."""
    payload = verify(secret, purpose, token)
    if payload is None or len(payload) != 24:
        return None
    expires_at = datetime.fromtimestamp(int.from_bytes(payload[16:], "big"), UTC)
    if now >= expires_at:
        return None
    return id_from_bytes(payload)
