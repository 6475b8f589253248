"""An email row and its attachments → the RFC 5322 message that leaves (stdlib ``email``).

Structure, from the outside in (a level is left out when it would hold one part):

    multipart/mixed                 attachments without a content_id
      multipart/alternative         text and html
        text/plain
        multipart/related           html with its inline (``cid:``) images
          text/html
          image/png; Content-ID: <logo>

The tree is built from ``compat32`` messages with payloads this module encodes
itself (7bit when the text allows it, quoted-printable otherwise, base64 for
attachments) and boundaries it picks, so the generator neither re-encodes nor scans
the text for boundary collisions (``EmailMessage`` with ``policy.SMTP`` costs far more);
``BytesGenerator`` writes it. Bcc recipients are envelope-only and never appear in a
header. (A hand-written writer of this tree beat the generator end to end by less than
the 1.5x that keeps a hand-written path: docs/decisions.md.)
"""

from __future__ import annotations

import base64
import binascii
import io
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.generator import BytesGenerator
from email.header import Header
from email.message import Message
from email.policy import Compat32
from email.utils import format_datetime, getaddresses
from typing import Any, Protocol
from urllib.parse import quote

from mailbridge.mail.addresses import format_mailbox, parse_mailbox
from mailbridge.storage.tables import Email

# RFC 5321 §4.5.3.1.6: 998 characters a line, CRLF excluded.
MAX_LINE = 998
HEADER_NAME = re.compile(r"^[\x21-\x39\x3b-\x7e]{1,76}$")
# Headers the message's own fields, the transport or the signature set: a custom
# header may not replace or duplicate them.
OWNED_HEADERS = frozenset({
    "from", "to", "cc", "bcc", "reply-to", "subject", "date", "message-id",
    "mime-version", "content-type", "content-transfer-encoding", "content-disposition",
    "content-id", "list-unsubscribe", "list-unsubscribe-post", "dkim-signature",
    "return-path", "received", "sender", "x-entity-ref-id",
})  # fmt: skip


_PLAIN_VALUE = re.compile(r"[\t\x20-\x7e]*")


class _Policy(Compat32):
    """``compat32`` that writes a header needing neither folding nor encoding — short,
    printable ASCII, the common case — as it is, without a costly round through
    ``Header``. Anything else goes the library's way; both give the same bytes
    (tests/unit/test_compose_headers.py)."""

    def fold_binary(self, name: str, value: Any) -> bytes:
        limit = self.max_line_length
        if (
            type(value) is str
            and limit is not None
            and len(name) + len(value) + 2 <= limit
            and _PLAIN_VALUE.fullmatch(value)
        ):
            return f"{name}: {value}{self.linesep}".encode("ascii")
        return super().fold_binary(name, value)


# 8bit: lets raw UTF-8 address headers through (see _addresses); bodies are ASCII anyway.
_random = random.Random()
_POLICY = _Policy(linesep="\r\n", max_line_length=78, cte_type="8bit")


class Composable(Protocol):
    """The fields of an email that composing reads (an ``Email`` row has them all)."""

    @property
    def id(self) -> str: ...
    @property
    def from_address(self) -> str: ...
    @property
    def to(self) -> list[str]: ...
    @property
    def cc(self) -> list[str]: ...
    @property
    def reply_to(self) -> list[str]: ...
    @property
    def subject(self) -> str: ...
    @property
    def html(self) -> str | None: ...
    @property
    def text(self) -> str | None: ...
    @property
    def headers(self) -> dict[str, Any]: ...
    @property
    def marketing(self) -> bool: ...
    @property
    def message_id(self) -> str: ...


@dataclass(frozen=True)
class AttachmentPart:
    """An attachment's bytes, ready to be encoded (fetched already when it had a ``path``)."""

    filename: str
    content_type: str
    content: bytes
    content_id: str | None = None


@dataclass(frozen=True)
class Unsubscribe:
    """RFC 2369/8058 one-click unsubscribe targets for marketing mail."""

    url: str  # https: POSTed to with ``List-Unsubscribe=One-Click``
    mailto: str | None = None  # an address, optionally with ``?subject=...``

    def header_value(self) -> str:
        targets = [f"<{self.url}>"]
        if self.mailto:
            targets.append(f"<mailto:{self.mailto}>")
        return ", ".join(targets)


def unsubscribe_mailto(email: Email, domain_name: str, return_path: str = "send") -> str:
    """The mailto target: the return-path subdomain, whose MX points at this service."""
    return f"unsubscribe@{return_path}.{domain_name}?subject=" + quote(f"unsubscribe {email.id}")


def compose(
    email: Composable,
    attachments: Sequence[AttachmentPart] = (),
    *,
    date: datetime,
    unsubscribe: Unsubscribe | None = None,
    transform_html: Callable[[str], str] | None = None,
) -> bytes:
    """The message as CRLF bytes; ``transform_html`` rewrites the html (tracking) first."""
    html = email.html
    if html is not None and transform_html is not None:
        html = transform_html(html)
    inline = [part for part in attachments if part.content_id and html is not None]
    attached = [part for part in attachments if part not in inline]

    body = _body(email.text, html, inline)
    if attached:
        root = _multipart("mixed", [body, *(_attachment(part) for part in attached)])
    else:
        root = body

    # Values are text or, for non-ASCII text, a Header the generator encodes.
    message: Message[str, str | Header] = Message(policy=_POLICY)
    for name, value in _headers(email, date, unsubscribe):
        message[name] = value
    # The body's own MIME headers follow the message headers.
    for name, value in root.items():
        message[name] = value
    message.set_payload(root.get_payload())
    buffer = io.BytesIO()
    BytesGenerator(buffer, mangle_from_=False, policy=_POLICY).flatten(message)
    return buffer.getvalue()


def _headers(
    email: Composable, date: datetime, unsubscribe: Unsubscribe | None
) -> list[tuple[str, str | Header]]:
    headers: list[tuple[str, str | Header]] = [("From", _addresses([email.from_address]))]
    headers.append(("To", _addresses(email.to)))
    if email.cc:
        headers.append(("Cc", _addresses(email.cc)))
    if email.reply_to:
        headers.append(("Reply-To", _addresses(email.reply_to)))
    headers.append(("Subject", _text_header(email.subject, "Subject")))
    headers.append(("Date", format_datetime(date)))
    headers.append(("Message-ID", email.message_id))
    headers.append(("MIME-Version", "1.0"))
    # Gmail threads messages with equal subjects unless each carries its own reference.
    headers.append(("X-Entity-Ref-ID", email.id))
    if email.marketing and unsubscribe is not None:
        headers.append(("List-Unsubscribe", unsubscribe.header_value()))
        headers.append(("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"))
    headers.extend(custom_headers(email.headers or {}))
    return headers


def custom_headers(headers: Mapping[str, object]) -> list[tuple[str, str | Header]]:
    """The caller's headers that may go out: valid names, not ours, single-line values."""
    return [(name, _text_header(value, name)) for name, value in _custom_header_values(headers)]


def _custom_header_values(headers: Mapping[str, object]) -> list[tuple[str, str]]:
    kept: list[tuple[str, str]] = []
    for name, raw in headers.items():
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            continue
        if name.lower() in OWNED_HEADERS or raw is None:
            continue
        value = str(raw)
        if "\r" in value or "\n" in value:
            continue  # header injection
        kept.append((name, value))
    return kept


def _addresses(values: Sequence[str]) -> str:
    formatted = []
    for name, address in _parsed(values):
        if not address:
            continue
        address = header_address(address)
        formatted.append(format_mailbox(name, address))
    text = ", ".join(formatted)
    if text.isascii():
        return text
    # An internationalized local part goes out as raw UTF-8 (RFC 6532, with SMTPUTF8):
    # smuggled past the ASCII generator as surrogate escapes, written back as bytes.
    return text.encode("utf-8").decode("ascii", "surrogateescape")


_PLAIN_ADDRESS = re.compile(r"^[^\s<>\"(),;:\\\[\]]+@[^\s<>\"(),;:\\\[\]]+$")


def _parsed(values: Sequence[str]) -> list[tuple[str, str]]:
    # Most addresses are bare: parsing those is most of the cost of the headers. The
    # others are read as acceptance read them (``getaddresses`` would take a name such
    # as ``0)`` for a comment and an address of its own).
    if all(_PLAIN_ADDRESS.match(value) for value in values):
        return [("", value) for value in values]
    pairs = []
    for value in values:
        mailbox = parse_mailbox(value)
        pairs.append((mailbox.name or "", mailbox.email) if mailbox else getaddresses([value])[0])
    return pairs


def header_address(address: str) -> str:
    """``address`` with an internationalized domain in its ASCII (IDNA) form."""
    local, at, domain = address.rpartition("@")
    if not at or domain.isascii():
        return address
    try:
        return f"{local}@{domain.encode('idna').decode('ascii')}"
    except UnicodeError:
        return address


def _text_header(value: str, name: str) -> str | Header:
    # Non-ASCII text becomes RFC 2047 encoded words, folded by the generator; so does text
    # that a reader would take for an encoded word of its own (``=?...?=``).
    if value.isascii() and "=?" not in value:
        return value
    return Header(value, "utf-8", header_name=name)


def _body(text: str | None, html: str | None, inline: Sequence[AttachmentPart]) -> Message:
    html_part: Message | None = None
    if html is not None:
        html_part = _text_part(html, "html")
        if inline:
            html_part = _multipart("related", [html_part, *(_attachment(p) for p in inline)])
    if text is not None and html_part is not None:
        return _multipart("alternative", [_text_part(text, "plain"), html_part])
    if html_part is not None:
        return html_part
    return _text_part(text or "", "plain")


def _text_part(text: str, subtype: str) -> Message:
    part = Message(policy=_POLICY)
    part["Content-Type"] = f'text/{subtype}; charset="utf-8"'
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isascii() and max(map(len, text.split("\n"))) <= MAX_LINE:
        part["Content-Transfer-Encoding"] = "7bit"
        part.set_payload(text)
    else:
        part["Content-Transfer-Encoding"] = "quoted-printable"
        encoded = binascii.b2a_qp(text.encode("utf-8"), quotetabs=False, istext=True)
        part.set_payload(encoded.decode("ascii"))
    return part


_PLAIN_FILENAME = re.compile(r"[A-Za-z0-9 ._()+,&#!~-]*")


def _attachment(attachment: AttachmentPart) -> Message:
    part = Message(policy=_POLICY)
    part["Content-Type"] = attachment.content_type or "application/octet-stream"
    filename: str | tuple[str, str, str] = attachment.filename
    if not _PLAIN_FILENAME.fullmatch(attachment.filename):
        # RFC 2231 for anything but plain names: non-ASCII, and what readers misread in a
        # quoted value (``=?...?=`` as an encoded word, ``<...>``, quotes, backslashes).
        filename = ("utf-8", "", attachment.filename)
    if attachment.content_id:
        part.add_header("Content-Disposition", "inline", filename=filename)
        part["Content-ID"] = f"<{attachment.content_id.strip('<>')}>"
    else:
        part.add_header("Content-Disposition", "attachment", filename=filename)
    if (attachment.content_type or "").split(";")[0].strip().lower() == "message/rfc822":
        # RFC 2046 §5.2.1: a message/rfc822 body is 7bit, 8bit or binary, never base64 —
        # only then do readers show it as a message. An original with 8-bit bytes or
        # over-long lines (relays may not take them) goes as base64: still delivered,
        # shown as a file.
        text = _seven_bit(attachment.content)
        if text is not None:
            part["Content-Transfer-Encoding"] = "7bit"
            part.set_payload(text)
            return part
    part["Content-Transfer-Encoding"] = "base64"
    part.set_payload(base64.encodebytes(attachment.content).decode("ascii"))
    return part


def _seven_bit(content: bytes) -> str | None:
    """``content`` as 7bit text with CRLF line ends (the generator writes a message/*
    payload as it is), if its lines are of at most 998 characters with no NUL; else None."""
    if not content.isascii() or b"\0" in content:
        return None
    lines = content.decode("ascii").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\r\n".join(lines) if max(map(len, lines)) <= MAX_LINE else None


def _multipart(subtype: str, parts: list[Message | str]) -> Message:
    container = Message(policy=_POLICY)
    # A random boundary never occurs in the encoded parts (7bit text could in theory
    # hold it; 96 random bits make that a non-event), so no collision scan is needed.
    # Unpredictability is not needed, so no system entropy call per message either.
    container["Content-Type"] = f'multipart/{subtype}; boundary="{_boundary()}"'
    container.set_payload(parts)
    return container


def _boundary() -> str:
    return f"=_{_random.getrandbits(96):024x}"
