"""Links the service signs: the token scheme, and attachment download links.

A token is itsdangerous's ``Signer`` output over the payload in base64url:
``<payload>.<signature>``, HMAC-SHA256 keyed with the instance secret
(``services.instance``) through a salt naming the purpose. The purpose keeps tokens of
one kind (an open pixel, a click, an unsubscribe, a download) from being replayed as
another. Payloads are compact bytes (ids as 16 bytes), which keeps links short; a link
that expires carries its expiry in the payload, so the time is handed in like the
secret and everything here stays pure.

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
from functools import lru_cache

from itsdangerous import Signer
from itsdangerous.encoding import base64_decode, base64_encode

LINK_PREFIX = "/t/"
DOWNLOAD_PATH = LINK_PREFIX + "a/"
VOTE_PATH = "/polls/vote/"


@lru_cache(maxsize=64)
def _signer(secret: bytes, purpose: str) -> Signer:
    return Signer(
        secret,
        salt=f"mailbridge.link.{purpose}",
        key_derivation="hmac",
        digest_method=hashlib.sha256,
    )


def sign(secret: bytes, purpose: str, payload: bytes) -> str:
    return _signer(secret, purpose).sign(base64_encode(payload)).decode("ascii")


def verify(secret: bytes, purpose: str, token: str) -> bytes | None:
    """The payload of a token signed for ``purpose`` with ``secret``; None for anything else.

    The token is signed again from its payload and compared whole, in constant time:
    ``Signer.unsign`` would also take other base64 spellings of the same signature, and
    a link changed anywhere must be nobody's (a poll vote). Tokens of the scheme before
    itsdangerous are still read: mail already sent carries them (``_legacy_payload``).
    """
    encoded, dot, _ = token.rpartition(".")
    if dot and token.isascii():
        expected = _signer(secret, purpose).sign(encoded)
        if hmac.compare_digest(expected, token.encode("ascii")):
            return base64_decode(encoded)
    return _legacy_payload(secret, purpose, token)


# The scheme before itsdangerous (signed until November 2026): ``<payload>.<mac>``,
# both base64url without padding, the MAC HMAC-SHA256 over ``purpose NUL payload`` cut
# to 16 bytes. Read only, never signed any more: click, open, unsubscribe and vote
# links never expire and stay in mailboxes. docs/decisions.md says how long it stays.

_LEGACY_MAC_BYTES = 16


def _legacy_payload(secret: bytes, purpose: str, token: str) -> bytes | None:
    encoded, dot, _ = token.partition(".")
    if not dot or not token.isascii():
        return None
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        return None
    mac = hmac.new(secret, purpose.encode() + b"\x00" + payload, hashlib.sha256).digest()
    expected = base64_encode(payload) + b"." + base64_encode(mac[:_LEGACY_MAC_BYTES])
    return payload if hmac.compare_digest(expected, token.encode("ascii")) else None


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
