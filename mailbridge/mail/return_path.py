"""The return path mailbridge sends with: ``bounces+<email id>-<tag>@<return path>.<domain>``.

A bounce or feedback report sent back to that address names the email it is about. Every
recipient sees the address (``Return-Path``), so the email id alone would let anyone who
received one email, or guessed an id, speak for it: the ``tag`` is a keyed HMAC of the
email id under the instance secret, and a report counts for the email only when the tag
verifies. It is 16 characters of lower-case base32 (80 bits): local parts are compared
case-insensitively by many MTAs, and the whole local part stays under RFC 5321's 64 octets.

Mail sent before tags existed carries ``bounces+<email id>@...``: it still reaches the team,
read as untagged (trusted no more than mail to any other address of the team).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ADDRESS = re.compile(rf"bounces\+({_UUID})(?:-([a-z2-7]{{16}}))?@[^@\s<>]+", re.IGNORECASE)
TAG_LENGTH = 16


@dataclass(frozen=True)
class ReturnPath:
    """What a return-path address says: the email id (lower-case) and its tag, if any."""

    email_id: str
    tag: str | None

    def verifies(self, secret: bytes) -> bool:
        """Whether the tag is the one mailbridge gave this email."""
        return self.tag is not None and hmac.compare_digest(self.tag, tag(secret, self.email_id))


def tag(secret: bytes, email_id: str) -> str:
    digest = hmac.new(secret, b"return-path\x00" + email_id.lower().encode(), hashlib.sha256)
    return base64.b32encode(digest.digest()).decode("ascii")[:TAG_LENGTH].lower()


def return_path_address(secret: bytes, email_id: str, host: str) -> str:
    """The envelope sender for an email sent from ``host`` (``<return path>.<domain>``)."""
    return f"bounces+{email_id}-{tag(secret, email_id)}@{host}"


def read_return_path(address: str) -> ReturnPath | None:
    """The email id and tag in a return-path address (angle brackets allowed, any case);
    None for any other address."""
    bare = address.strip()
    if bare.startswith("<") and bare.endswith(">"):
        bare = bare[1:-1].strip()
    match = _ADDRESS.fullmatch(bare)
    if match is None:
        return None
    found = match.group(2)
    return ReturnPath(match.group(1).lower(), found.lower() if found else None)
