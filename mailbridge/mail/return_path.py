"""The return path mailbridge sends with: ``bounces+<email id>-<tag>@<return path>.<domain>``.

A bounce or feedback report sent back to that address names the email it is about. Every
recipient sees the address (``Return-Path``), so the email id alone would let anyone who
received one email, or guessed an id, speak for it: the ``tag`` is a keyed HMAC of the
email id *and the one recipient of the envelope* under the instance secret. Each
recipient gets an envelope of its own (``runner.delivery``), so a report counts only for
the email and the recipient its tag was made for: a co-recipient who read the return
path cannot speak for anyone else. It is 16 characters of lower-case base32 (80 bits):
local parts are compared case-insensitively by many MTAs, and the whole local part stays
under RFC 5321's 64 octets.

An envelope to several recipients at once (the file outbox, and mail sent before
recipients had envelopes of their own) carries the tag of the email id alone. Mail sent
before tags existed carries ``bounces+<email id>@...``: it still reaches the team, read
as untagged (trusted no more than mail to any other address of the team).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ADDRESS = re.compile(rf"bounces\+({_UUID})(?:-([a-z2-7]{{16}}))?@[^@\s<>]+", re.IGNORECASE)
TAG_LENGTH = 16


@dataclass(frozen=True)
class ReturnPath:
    """What a return-path address says: the email id (lower-case) and its tag, if any."""

    email_id: str
    tag: str | None

    def verifies(self, secret: bytes, recipient: str | None = None) -> bool:
        """Whether the tag is the one mailbridge gave this email's envelope to
        ``recipient`` (None: an envelope to several, tagged for the email alone)."""
        if self.tag is None:
            return False
        return hmac.compare_digest(self.tag, tag(secret, self.email_id, recipient))

    def recipient(self, secret: bytes, recipients: Iterable[str]) -> str | None:
        """The one of ``recipients`` whose envelope this return path is, if any."""
        return next((each for each in recipients if self.verifies(secret, each)), None)


def tag(secret: bytes, email_id: str, recipient: str | None = None) -> str:
    message = b"return-path\x00" + email_id.lower().encode()
    if recipient is not None:
        message += b"\x00" + recipient.lower().encode()
    digest = hmac.new(secret, message, hashlib.sha256)
    return base64.b32encode(digest.digest()).decode("ascii")[:TAG_LENGTH].lower()


def return_path_address(
    secret: bytes, email_id: str, host: str, recipient: str | None = None
) -> str:
    """The envelope sender for an email sent from ``host`` (``<return path>.<domain>``)
    to ``recipient`` alone (None: to several)."""
    return f"bounces+{email_id}-{tag(secret, email_id, recipient)}@{host}"


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
