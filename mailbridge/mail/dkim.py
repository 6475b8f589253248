"""DKIM: a sending domain's key pair, the TXT value that publishes it, and signing.

Signing keeps dkimpy's canonicalization, header selection (over ``SIGNED_HEADERS``) and
``DKIM-Signature`` layout but hands the RSA operation to OpenSSL (``cryptography``): dkimpy's own
pure-Python modular exponentiation alone would cap delivery at a low rate; OpenSSL
signs far faster and releases the GIL while it does. Loaded keys are cached per PEM.
:func:`sign_with_dkimpy` is dkimpy's own ``dkim.sign``: the library path the delivery
bench times this module against, end to end.

Keys are RSA 2048 (the size every large receiver accepts; 1024 is being phased out
and 4096 does not fit comfortably in DNS). The private key is kept as PKCS#1 PEM,
which every version of dkimpy parses; the public key is published as the base64
of its SubjectPublicKeyInfo DER, the form RFC 6376 §3.6.1 asks for in ``p=``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import dkim
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from dkim.canonicalization import (
    CanonicalizationPolicy,
    compress_whitespace,
    correct_empty_body,
    strip_trailing_lines,
)

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
    """A fresh RSA key pair (CPU-heavy: run it off the event loop)."""
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


def sign(
    message: bytes,
    domain: str,
    selector: str,
    private_key_pem: str,
    *,
    signed_at: float | None = None,
) -> bytes:
    """``message`` with a ``DKIM-Signature`` header prepended, signed for ``domain``.

    The message keeps its own line endings; the new header uses the same ones.
    ``signed_at`` (seconds since the epoch) is the ``t=`` tag; the wall clock if omitted.
    """
    with _signing_errors(domain):
        key = _private_key(private_key_pem)
        pending = _PendingSignature(message, domain, selector, signed_at)
        return pending.finish(_rsa_sign(key, pending.digest))


async def sign_off_loop(
    message: bytes,
    domain: str,
    selector: str,
    private_key_pem: str,
    *,
    signed_at: float | None = None,
) -> bytes:
    """:func:`sign`, with the RSA operation in a worker thread: OpenSSL releases the GIL,
    so the event loop keeps only the canonicalization and hashing.

    One signing thread: more would take the core the event loop runs on."""
    with _signing_errors(domain):
        key = _private_key(private_key_pem)
        pending = _PendingSignature(message, domain, selector, signed_at)
    signature = await asyncio.get_running_loop().run_in_executor(
        _signing_thread(), _rsa_sign, key, pending.digest
    )
    with _signing_errors(domain):
        return pending.finish(signature)


def sign_with_dkimpy(message: bytes, domain: str, selector: str, private_key_pem: str) -> bytes:
    """:func:`sign` by dkimpy's own ``dkim.sign`` (the library path: its pure-Python
    RSA, the key parsed at every call): the same message. Only the delivery bench signs
    this way (``rendering.RenderPaths``), to time :func:`sign` against it end to end."""
    with _signing_errors(domain):
        header: bytes = dkim.sign(
            message, selector.encode("ascii"), domain.encode("ascii"),
            private_key_pem.encode("ascii"), canonicalize=CANONICALIZATION,
            include_headers=signed_header_names(message),
            linesep=b"\r\n" if b"\r\n" in message else b"\n",
        )  # fmt: skip
    return header + message


@functools.cache
def _signing_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="dkim-rsa")


@contextlib.contextmanager
def _signing_errors(domain: str) -> Iterator[None]:
    try:
        yield
    except (dkim.DKIMException, ValueError, TypeError, UnicodeError) as exc:
        raise DkimError(f"cannot DKIM-sign for {domain}: {exc}") from exc


@functools.lru_cache(maxsize=256)
def _private_key(private_key_pem: str) -> rsa.RSAPrivateKey:
    # Loading checks the key's consistency (milliseconds): once per key, not per message.
    key = serialization.load_pem_private_key(private_key_pem.encode("ascii"), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("not an RSA private key")
    return key


def _rsa_sign(key: rsa.RSAPrivateKey, digest: bytes) -> bytes:
    return key.sign(digest, padding.PKCS1v15(), Prehashed(hashes.SHA256()))


HEADER_NAME = b"DKIM-Signature"
_POLICY = CanonicalizationPolicy.from_c_value(b"/".join(CANONICALIZATION))
# The fields signed when present: dkimpy's recommended list (RFC 6376 §5.4.1: From, To,
# Cc, Subject, Date, Message-ID, MIME-Version, Content-Type, Reply-To, List-Unsubscribe,
# In-Reply-To, References, ...), and what mailbox providers' bulk-sender rules add:
# List-Unsubscribe-Post (RFC 8058 §4: one-click unsubscribe counts only when both
# List-* fields are signed) and Feedback-ID (Gmail's feedback loop). From is signed once
# more than it occurs (over-signed), so a second From added on the way breaks it.
SIGNED_HEADERS: tuple[bytes, ...] = (
    *dkim.DKIM.SHOULD,
    *dkim.DKIM.FROZEN,
    b"list-unsubscribe-post",
    b"feedback-id",
)
_SIGNED = frozenset(SIGNED_HEADERS)
_FROZEN = frozenset(dkim.DKIM.FROZEN)
_LINE_END = re.compile(rb"\r?\n")
_PLACEHOLDER = b"0" * 60
_MAYBE_B_TAG = re.compile(rb"b\s*=")
_B_TAGS = frozenset(
    separator + b"b=" for separator in (b";", b" ", b"\t", b"\n", b"\r", b"\f", b"\v")
)
_FIELD_NAME = re.compile(rb"[\x21-\x39\x3b-\x7e]+")  # printable, no colon: dkimpy's name


class _PendingSignature:
    """dkimpy's signer, cut where the RSA operation happens.

    Follows ``dkim.DKIM.sign`` for rsa-sha256 with the default header list and the
    first half of ``DomainSigner.gen_header`` (same header parsing, canonicalization,
    folding, ``b=`` placeholder and hashing helpers) up to the digest; :meth:`finish`
    is the second half, given the signature. Shortcuts give the same bytes for less
    (each checked against dkimpy by hypothesis in tests/unit/test_dkim.py): the body
    is found with ``bytes.find``, a header block of CRLF lines is split here rather
    than line by line through dkimpy's parser, text with nothing to canonicalize —
    no tab, no run of spaces, no trailing space, no bare newline — is taken as it is
    rather than through dkimpy's regular expressions, and the b= placeholder, last in
    the header, is cut off rather than matched. Together they cut much of the time the
    signer spent outside the RSA operation.
    """

    def __init__(self, message: bytes, domain: str, selector: str, signed_at: float | None):
        self.message = message
        self.linesep = b"\r\n" if b"\r\n" in message else b"\n"
        headers, body = _parse(message)
        include_headers = tuple(name.lower() for name in _default_sign_headers(headers))
        if b"from" not in include_headers:
            raise dkim.ParameterError("The From header field MUST be signed")
        domain_bytes = domain.encode("ascii")
        timestamp = int(time.time() if signed_at is None else signed_at)
        body_hash = base64.b64encode(hashlib.sha256(_canonical_body(body)).digest())
        self.fields: list[tuple[bytes, bytes]] = [
            (b"v", b"1"),
            (b"a", b"rsa-sha256"),
            (b"c", _POLICY.to_c_value()),
            (b"d", domain_bytes),
            (b"i", b"@" + domain_bytes),
            (b"q", b"dns/txt"),
            (b"s", selector.encode("ascii")),
            (b"t", str(timestamp).encode("ascii")),
            (b"h", b" : ".join(include_headers)),
            (b"bh", body_hash),
            # A placeholder long enough to fold b= onto its own line, as dkimpy does.
            (b"b", _PLACEHOLDER),
        ]
        header_value = b"; ".join(b"=".join(field) for field in self.fields)
        header_value = dkim.fold(header_value, namelen=len(HEADER_NAME), linesep=b"\r\n")
        # ``dkim.hash_headers``: the chosen fields, then this header with an empty b=,
        # canonicalized and without its line end.
        hasher = hashlib.sha256()
        for name, value in dkim.select_headers(_canonical_headers(headers), include_headers):
            hasher.update(name + b":" + value)
        [(name, value)] = _canonical_headers([[HEADER_NAME, b" " + _without_b(header_value)]])
        hasher.update(name + b":" + value.rstrip())
        self.digest = hasher.digest()

    def finish(self, signature: bytes) -> bytes:
        """The message with its ``DKIM-Signature`` header."""
        fields = [(b"b", base64.b64encode(signature)) if name == b"b" else (name, value)
                  for name, value in self.fields]  # fmt: skip
        header_value = b"; ".join(b"=".join(field) for field in fields) + self.linesep
        folded: bytes = dkim.fold(header_value, namelen=len(HEADER_NAME), linesep=self.linesep)
        return HEADER_NAME + b": " + folded + self.message


def _parse(message: bytes) -> tuple[list[list[bytes]], bytes]:
    """``dkim.rfc822_parse``: the header fields, and the body with CRLF line ends."""
    end = _headers_end(message)
    if end is None:
        return dkim.rfc822_parse(message)  # type: ignore[no-any-return]
    headers = _header_fields(message[: end[0]])
    body = message[end[1] :]
    if body.count(b"\n") != body.count(b"\r\n"):
        body = _LINE_END.sub(b"\r\n", body)
    return headers, body


def _headers_end(message: bytes) -> tuple[int, int] | None:
    """Where the blank line after the header block starts and ends (the first match of
    ``\\A\\r?\\n|\\r?\\n\\r?\\n``, found with ``bytes.find``: the regular expression
    scanned the whole message), or None."""
    if message[:1] == b"\n":
        return 0, 1
    if message[:2] == b"\r\n":
        return 0, 2
    found = [(at, 2) for at in [message.find(b"\n\n")] if at >= 0]
    found += [(at, 3) for at in [message.find(b"\n\r\n")] if at >= 0]
    if not found:
        return None
    newline, length = min(found)
    start = newline - 1 if newline > 0 and message[newline - 1 : newline] == b"\r" else newline
    return start, newline + length


def _header_fields(block: bytes) -> list[list[bytes]]:
    """``dkim.rfc822_parse`` of a header block: [name, value with CRLF] a field. A block
    of CRLF lines, each a field or a continuation, is split here (what composing
    writes; dkimpy's line-by-line regular expressions cost far more); anything else goes
    to dkimpy."""
    if not block:
        return []
    fields: list[list[bytes]] = []
    if block.count(b"\n") == block.count(b"\r\n"):
        for line in block.split(b"\r\n"):
            if line[:1] in (b" ", b"\t") and fields:
                fields[-1][1] += line + b"\r\n"
                continue
            name, colon, value = line.partition(b":")
            if not colon or not _FIELD_NAME.fullmatch(name):
                break  # dkimpy's way: it skips a "From " line, or refuses
            fields.append([name, value + b"\r\n"])
        else:
            return fields
    headers, _ = dkim.rfc822_parse(block)
    return headers  # type: ignore[no-any-return]


def _default_sign_headers(headers: list[list[bytes]]) -> list[bytes]:
    """As ``DKIM.default_sign_headers`` over ``SIGNED_HEADERS``: the fields present, in
    their order, From once more."""
    present = [name for name, _ in headers if name.lower() in _SIGNED]
    return present + [name for name in present if name.lower() in _FROZEN]


def signed_header_names(message: bytes) -> list[bytes]:
    """What ``h=`` will list for ``message`` (lower case): dkimpy's ``include_headers``
    for the same choice."""
    headers, _body = _parse(message)
    return [name.lower() for name in _default_sign_headers(headers)]


def _without_b(header_value: bytes) -> bytes:
    """``dkim.RE_BTAG.sub(b"\\1", header_value)``: the b= tag's value taken out. The
    placeholder ends the header, so it is cut off — unless something before it could
    look like a b= tag to the expression (rarely: a base64 body hash ending in ``b=``),
    which goes through the slower expression."""
    head = len(header_value) - len(_PLACEHOLDER)  # where the placeholder starts
    if (
        head >= 3
        and header_value.endswith(_PLACEHOLDER)
        and header_value[head - 3 : head] in _B_TAGS
        and not _MAYBE_B_TAG.search(header_value, 0, head - 2)
    ):
        return header_value[:head]
    return dkim.RE_BTAG.sub(b"\\1", header_value)  # type: ignore[no-any-return]


def _plain(text: bytes) -> bool:
    """Nothing for relaxed canonicalization to change inside the lines of ``text``."""
    return b"\t" not in text and b"  " not in text and b" \r\n" not in text


def _canonical_body(body: bytes) -> bytes:
    if _plain(body):
        return correct_empty_body(strip_trailing_lines(body))  # type: ignore[no-any-return]
    return _POLICY.canonicalize_body(body)  # type: ignore[no-any-return]


def _canonical_headers(headers: list[list[bytes]]) -> list[tuple[bytes, bytes]]:
    canonical = []
    for name, value in headers:
        unfolded = value.replace(b"\r\n", b"").replace(b"\n", b"")
        if b"\t" in unfolded or b"  " in unfolded:
            unfolded = compress_whitespace(unfolded)
        canonical.append((name.lower().rstrip(), unfolded.strip() + b"\r\n"))
    return canonical
