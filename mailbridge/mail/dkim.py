"""DKIM: a sending domain's key pair, the TXT value that publishes it, and signing.

Keys are RSA 2048 (the size every large receiver accepts; 1024 is being phased out
and 4096 does not fit comfortably in DNS). The private key is kept as PKCS#1 PEM,
which every version of dkimpy parses; the public key is published as the base64
of its SubjectPublicKeyInfo DER, the form RFC 6376 §3.6.1 asks for in ``p=``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mailbridge.errors import MailbridgeError

KEY_BITS = 2048
PUBLIC_EXPONENT = 65537
# Relaxed body canonicalization survives the whitespace changes relays make.
CANONICALIZATION = (b"relaxed", b"relaxed")


class DkimError(MailbridgeError):
    """A message or key that cannot be signed."""


@dataclass(frozen=True)
class DkimKeyPair:
    private_key_pem: str
    public_key: str  # base64 DER, exactly as published in ``p=``

    @property
    def txt_value(self) -> str:
        return txt_value(self.public_key)


def generate_key_pair(bits: int = KEY_BITS) -> DkimKeyPair:
    """A fresh RSA key pair (CPU-bound for ~0.1 s: run it off the event loop)."""
    private_key = rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=bits)
    pem = private_key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.TraditionalOpenSSL,
        encryption_algorithm=serialization.NoEncryption(),
    )
    der = private_key.public_key().public_bytes(
        encoding=serialization.Encoding.DER,
        format=serialization.PublicFormat.SubjectPublicKeyInfo,
    )
    return DkimKeyPair(pem.decode("ascii"), base64.b64encode(der).decode("ascii"))


def txt_value(public_key: str) -> str:
    """The TXT record value published at ``<selector>._domainkey.<domain>``."""
    return f"v=DKIM1; k=rsa; p={public_key}"


def published_key(txt: str) -> str | None:
    """The ``p=`` of a DKIM TXT value with its whitespace removed, or None when absent."""
    for tag in txt.split(";"):
        name, separator, value = tag.partition("=")
        if separator and name.strip() == "p":
            return "".join(value.split())
    return None


def sign(message: bytes, domain: str, selector: str, private_key_pem: str) -> bytes:
    """``message`` with a ``DKIM-Signature`` header prepended, signed for ``domain``.

    The message keeps its own line endings; the new header uses the same ones.
    """
    linesep = b"\r\n" if b"\r\n" in message else b"\n"
    try:
        header = dkim.sign(
            message,
            selector.encode("ascii"),
            domain.encode("ascii"),
            private_key_pem.encode("ascii"),
            canonicalize=CANONICALIZATION,
            linesep=linesep,
        )
    except dkim.DKIMException as exc:
        raise DkimError(f"cannot DKIM-sign for {domain}: {exc}") from exc
    return bytes(header) + message
