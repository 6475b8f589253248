"""Secret tokens (API keys, member sessions): shown once, stored only as a hash.

A token reads ``<kind>_<prefix>_<secret>``. The prefix is a public lookup handle; the
SHA-256 of the whole token is compared in constant time with ``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
from dataclasses import dataclass

ALPHABET = string.ascii_letters + string.digits
PREFIX_LENGTH = 10
SECRET_LENGTH = 32


@dataclass(frozen=True)
class IssuedToken:
    token: str
    prefix: str
    digest: str


def _random(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(kind: str) -> IssuedToken:
    prefix = _random(PREFIX_LENGTH)
    token = f"{kind}_{prefix}_{_random(SECRET_LENGTH)}"
    return IssuedToken(token=token, prefix=prefix, digest=digest(token))


def split(token: str, kind: str) -> str | None:
    """The lookup prefix of a well-formed token of ``kind``, else None."""
    parts = token.split("_")
    if len(parts) != 3 or parts[0] != kind:
        return None
    prefix, secret = parts[1], parts[2]
    if len(prefix) != PREFIX_LENGTH or len(secret) != SECRET_LENGTH:
        return None
    return prefix


def matches(token: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(token), stored_digest)
