"""The parts of a report: its MIME parts, its machine-readable field blocks, the copy of the
original message it carries, and the mailbridge email that original was.

How the original email is found (``original_email_id``, a mailbridge email id, lower-case), first
match wins:

1. the envelope recipient(s) the listener accepted the report for: mailbridge sends with its
   VERP envelope sender (``bounces+<email id>[-<tag>]@<return path label>.<domain>``), where
   bounces go;
2. the original's ``Message-ID`` (``<email id@domain>``), from the embedded ``message/rfc822``
   (``message/global``) or ``text/rfc822-headers`` part, else -- for a text bounce -- the header
   block after the "copy of the message" line;
3. the original's ``Return-Path`` header (the VERP address again, as the receiver recorded it);
4. then, less direct: the report's own fields naming the original (a DSN's
   ``X-Original-Message-ID``/``X-Postfix-Sender``, an ARF's ``Original-Mail-From``), the VERP
   address the report says it was delivered to (``Delivered-To``, ``X-Original-To``,
   ``Envelope-To``), and the report's ``In-Reply-To``/``References`` (Gmail and Exchange set them
   to the original's Message-ID).

An id found this way is only a UUID of the right shape: the caller checks that such an email
exists (and belongs to the account the report was addressed to) before acting on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser, BytesParser

from mailbridge.mail._report_ids import (
    clean,
    header,
    headers,
    id_from_address,
    id_from_message_id,
    message_email_id,
    referenced_message_ids,
    verp_email_id,
)

_MAX_DEPTH = 16  # MIME nesting followed; real reports use three or four levels

ORIGINAL_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
ORIGINAL_HEADERS_TYPES = frozenset(
    {"text/rfc822-headers", "message/rfc822-headers", "message/global-headers"}
)

# The line a text bounce puts before its copy of the original (Exim, qmail, sendmail, others).
COPY_MARKER = re.compile(
    rb"^[^\n]*(?:copy of the (?:original )?message|original message follow|"
    rb"below this line is a copy|returned message|undelivered message|"
    rb"header of the (?:original|source) (?:message|mail)|original message headers)[^\n]*\n",
    re.IGNORECASE | re.MULTILINE,
)


def parse(raw: bytes) -> EmailMessage:
    return BytesParser(policy=policy.default).parsebytes(raw)


def parts(message: Message, depth: int = 0) -> Iterator[Message]:
    """The message and its MIME parts, not descending into embedded messages (the original)."""
    yield message
    if depth >= _MAX_DEPTH or message.get_content_maintype() != "multipart":
        return
    payload = message.get_payload()
    if isinstance(payload, list):
        for part in payload:
            if isinstance(part, Message):
                yield from parts(part, depth + 1)


def find(message: Message, types: Iterable[str]) -> Message | None:
    wanted = frozenset(types)
    return next((part for part in parts(message) if part.get_content_type() in wanted), None)


def field_blocks(text: str) -> list[dict[str, str]]:
    """``Name: value`` blocks separated by blank lines (a DSN's body), first value of a name."""
    blocks: list[dict[str, str]] = []
    for chunk in re.split(r"\r?\n[ \t]*\r?\n", text):
        fields: dict[str, str] = {}
        current: str | None = None  # the field continuation lines extend
        for line in chunk.splitlines():
            if line[:1] in (" ", "\t"):
                if current is not None:
                    fields[current] += " " + line.strip()
                continue
            key, sep, value = line.partition(":")
            name = key.strip().lower()
            if not sep or not name or name in fields:
                current = None
                continue
            fields[name] = value.strip()
            current = name
        if fields:
            blocks.append({name: clean(value) for name, value in fields.items()})
    return blocks


def message_fields(message: Message) -> dict[str, str]:
    """A message's header fields, lower-case names, first value of a name."""
    fields: dict[str, str] = {}
    for key, value in message.raw_items():
        fields.setdefault(key.strip().lower(), clean(str(value)))
    return fields


def payload_text(part: Message) -> str:
    """A part's body as text: undecoded ``get_payload()`` would turn non-ASCII UTF-8 (an
    RFC 6533 address) into U+FFFD."""
    data = part.get_payload(decode=True)
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    payload = part.get_payload()
    return payload if isinstance(payload, str) else ""


def report_blocks(part: Message) -> list[dict[str, str]]:
    """The field blocks of a delivery-status or feedback-report part, however it was parsed:
    the email package splits ``message/delivery-status`` into one message per block, and parses
    other ``message/*`` types as one message whose body holds any further blocks."""
    payload = part.get_payload()
    if isinstance(payload, str):
        return field_blocks(payload_text(part))
    blocks: list[dict[str, str]] = []
    for block in payload if isinstance(payload, list) else []:
        if not isinstance(block, Message):
            continue
        fields = message_fields(block)
        if fields:
            blocks.append(fields)
        if isinstance(block.get_payload(), str):
            blocks.extend(field_blocks(payload_text(block)))
    return blocks


def original(message: Message) -> Message | None:
    """The original message (or its headers) a report carries."""
    for part in parts(message):
        content_type = part.get_content_type()
        if content_type not in ORIGINAL_MESSAGE_TYPES | ORIGINAL_HEADERS_TYPES:
            continue
        payload = part.get_payload()
        if isinstance(payload, list):  # message/*: the email package parsed it already
            if payload and isinstance(payload[0], Message):
                return payload[0]
            continue
        data = part.get_payload(decode=True)  # text/rfc822-headers
        if isinstance(data, bytes) and data.strip():
            return BytesHeaderParser(policy=policy.default).parsebytes(data.lstrip())
    return _original_in_text(message)


def _original_in_text(message: Message) -> Message | None:
    """The header block after "This is a copy of the message" in a text bounce."""
    for part in parts(message):
        if part.get_content_type() != "text/plain":
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        data = data.replace(b"\r\n", b"\n")
        marker = COPY_MARKER.search(data)
        if marker:
            found = BytesHeaderParser(policy=policy.default).parsebytes(
                data[marker.end() :].lstrip(b"\n")
            )
            if found.keys():
                return found
    return None


def original_email_id(
    message: Message,
    original: Message | None,
    envelope_recipients: Sequence[str],
    *,
    extra_ids: Iterable[str | None] = (),
    extra_addresses: Iterable[str | None] = (),
) -> str | None:
    """The mailbridge email id a report is about, in the order the module docstring gives."""
    candidates: list[str | None] = [verp_email_id(each) for each in envelope_recipients]
    if original is not None:
        candidates.append(id_from_message_id(header(original, "message-id")))
        candidates.extend(id_from_address(value) for value in headers(original, "return-path"))
    candidates.extend(id_from_message_id(value) for value in extra_ids)
    candidates.extend(id_from_address(value) for value in extra_addresses)
    for name in ("delivered-to", "x-original-to", "envelope-to"):
        candidates.extend(id_from_address(value) for value in headers(message, name))
    candidates.extend(message_email_id(value) for value in referenced_message_ids(message))
    return next((candidate for candidate in candidates if candidate), None)
