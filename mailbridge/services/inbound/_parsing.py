"""A received message's fields, read with the standard library's parser.

The tree is built with the parser's default ``compat32`` policy, whose headers stay raw
strings until asked for; the fields the rows keep are decoded here with the same
library's ``email.header`` (RFC 2047 encoded words) and ``email.utils`` (addresses,
RFC 2231 parameters). They read as ``policy.default`` reads them — a unit test holds
the two to the same answers on a corpus — at about a seventh of its cost: the modern
policy builds a header object for every header it touches, and that was most of the
listener's time per message.

The tree is read within bounds (``_mime``: depth, parts); a message cut short there,
or whose structure is broken (a boundary that never comes), keeps what could be read
and a ``parse_error`` saying why. An attached message (``message/rfc822``) is one
attachment, its bytes as sent, not a source of the outer message's parts or bodies.
Never raises: any message is stored and listed like any other.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from email.header import decode_header, make_header
from email.message import Message
from email.utils import getaddresses
from typing import Any

from mailbridge.mail.inbound_reports import Bounce, Complaint, parse_report, referenced_message_ids
from mailbridge.services.inbound._mime import (
    TOO_DEEP,
    TOO_MANY_PARTS,
    Tree,
    header_block,
    read_tree,
)

MAX_HEADER_VALUE = 4000
_FOLD = re.compile(r"\r?\n(?=[ \t])")
_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?")


@dataclass(frozen=True)
class Attachment:
    filename: str | None
    content_type: str
    content_id: str | None
    content: bytes


@dataclass
class ParsedMessage:
    # The parsed tree; read in a worker process or cut short, only the top-level header
    # block (all that is_auto_reply and authentication read).
    message: Message | None = None
    from_address: str | None = None
    to: list[str] = field(default_factory=list)
    cc: list[str] = field(default_factory=list)
    subject: str | None = None
    message_id: str | None = None
    in_reply_to: str | None = None
    references: list[str] = field(default_factory=list)
    text: str | None = None
    html: str | None = None
    headers: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    parse_error: str | None = None


def _unfolded(value: str) -> str:
    """A raw value as text: unfolded, 8-bit bytes read as UTF-8 (the rest replaced)."""
    if not value.isascii():
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _FOLD.sub("", value)


def decoded(value: str) -> str:
    """A raw header value as a person reads it: unfolded, encoded words decoded."""
    text = _unfolded(value)
    if _ENCODED_WORD.search(text):
        # An encoded word that does not decode stays as it came.
        with contextlib.suppress(UnicodeError, LookupError, ValueError):
            text = str(make_header(decode_header(text)))
    return text.strip()


def _text(value: str | None) -> str | None:
    if value is None:
        return None
    return value.replace("\x00", "")[:MAX_HEADER_VALUE]


def _raw(message: Message, name: str) -> list[str]:
    name = name.lower()
    return [value for key, value in message.raw_items() if key.lower() == name]


def _first(message: Message, name: str) -> str | None:
    values = _raw(message, name)
    return _text(decoded(values[0])) if values else None


def _addresses(message: Message, name: str) -> list[str]:
    # Addresses are never encoded words: split the raw value, so that a decoded display
    # name with a comma in it cannot split an address in two.
    values = [_unfolded(value) for value in _raw(message, name)]
    return [address for _name, address in getaddresses(values) if address]


def _is_attachment(part: Message) -> bool:
    return part.get_content_disposition() == "attachment"


def _bodies(part: Message, kind: str) -> Iterator[Message]:
    """``EmailMessage.get_body``'s search for one kind: text parts that are not attachments,
    depth first, only the start part of a multipart/related."""
    if _is_attachment(part):
        return
    maintype, subtype = part.get_content_maintype(), part.get_content_subtype()
    if maintype == "text":
        if subtype == kind:
            yield part
        return
    payload = part.get_payload()
    if maintype == "multipart" and isinstance(payload, str) and kind == "plain":
        yield part  # its boundary never came: the best reading of its body is as text
        return
    if maintype != "multipart" or not isinstance(payload, list):
        return
    parts = [subpart for subpart in payload if isinstance(subpart, Message)]
    if subtype != "related":
        for subpart in parts:
            yield from _bodies(subpart, kind)
        return
    start = part.get_param("start")
    candidate = next((p for p in parts if start and p.get("content-id") == start), None)
    if candidate is None and parts:
        candidate = parts[0]
    if candidate is not None:
        yield from _bodies(candidate, kind)


def _content(part: Message) -> str | None:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return None
    # A broken multipart names no charset; UTF-8 reads ASCII the same and more besides.
    default = "utf-8" if part.get_content_maintype() == "multipart" else "us-ascii"
    charset = part.get_content_charset() or default
    try:
        text = payload.decode(charset, "replace")
    except LookupError:  # a charset Python does not know: read it as UTF-8
        text = payload.decode("utf-8", "replace")
    return text.replace("\x00", "")


def _body(message: Message, kind: str) -> str | None:
    part = next(_bodies(message, kind), None)
    return _content(part) if part is not None else None


def _filename(part: Message) -> str | None:
    filename = part.get_filename()
    return _text(decoded(filename)) if filename is not None else None


_ATTACHED_MESSAGES = frozenset({"message/rfc822", "message/global"})
_UNSAFE_IN_FILENAME = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')


def _message_filename(part: Message) -> str:
    """An attached message's name: its inner Subject, safe as a file name, ``.eml``."""
    inner = part.get_payload()
    first = inner[0] if isinstance(inner, list) and inner else None
    subject = _first(first, "Subject") if isinstance(first, Message) else None
    name = " ".join(_UNSAFE_IN_FILENAME.sub(" ", subject or "").split())[:100].strip(". ")
    return f"{name or 'message'}.eml"


def _attachment(tree: Tree, part: Message, content_type: str) -> Attachment | None:
    filename = _filename(part)
    if content_type in _ATTACHED_MESSAGES:
        content = tree.body_bytes(part)
        if content is None:  # still open when parsing stopped
            return None
        return Attachment(
            filename=filename or _message_filename(part), content_type=content_type,
            content_id=_first(part, "Content-ID"), content=content,
        )  # fmt: skip
    if filename is None and part.get_content_disposition() != "attachment":
        return None
    payload = tree.body_bytes(part) if part.is_multipart() else part.get_payload(decode=True)
    return Attachment(
        filename=filename, content_type=content_type, content_id=_first(part, "Content-ID"),
        content=payload if isinstance(payload, bytes) else b"",
    )  # fmt: skip


def _attachments(tree: Tree) -> list[Attachment]:
    """Depth first; a message/* part (an attached message, a report's fields) is one
    part: what is inside it is not the outer message's."""
    found, pending = [], [tree.root]
    while pending:
        part = pending.pop()
        payload, content_type = part.get_payload(), part.get_content_type()
        if content_type.startswith("multipart/") and isinstance(payload, list):
            pending.extend(reversed([p for p in payload if isinstance(p, Message)]))
            continue
        attachment = _attachment(tree, part, content_type)
        if attachment is not None:
            found.append(attachment)
    return found


def _read_headers(parsed: ParsedMessage, message: Message) -> None:
    parsed.message = message
    parsed.from_address = _first(message, "From")
    parsed.to = _addresses(message, "To")
    parsed.cc = _addresses(message, "Cc")
    parsed.subject = _first(message, "Subject")
    parsed.message_id = _first(message, "Message-ID")
    parsed.in_reply_to = _first(message, "In-Reply-To")
    parsed.references = referenced_message_ids(message)
    headers: dict[str, Any] = {}
    for name, value in message.raw_items():
        headers.setdefault(name.lower(), []).append(_text(decoded(value)))
    parsed.headers = {k: v[0] if len(v) == 1 else v for k, v in headers.items()}


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:1000]


def parse(raw: bytes) -> ParsedMessage:
    parsed = ParsedMessage()
    try:
        tree = read_tree(raw)
        _read_headers(parsed, tree.root)
        parsed.parse_error = tree.stopped or "; ".join(tree.defects())[:1000] or None
        parsed.text = _body(tree.root, "plain")
        parsed.html = _body(tree.root, "html")
        parsed.attachments = _attachments(tree)
    except Exception as exc:  # any malformed input: keep what was read, say why
        parsed.parse_error = _error(exc)
    return parsed


def headers_only(raw: bytes, reason: str) -> ParsedMessage:
    """A message not parsed (``reason``, its ``parse_error``): its top-level header fields."""
    parsed = ParsedMessage(parse_error=reason)
    with contextlib.suppress(Exception):  # no header block to speak of: nothing more
        _read_headers(parsed, header_block(raw))
    return parsed


def _stopped_at_a_limit(parsed: ParsedMessage) -> bool:
    """The message is hostile, or broken past reading."""
    return parsed.parse_error in (TOO_DEEP, TOO_MANY_PARTS)


def read(raw: bytes, envelope_to: Sequence[str]) -> tuple[ParsedMessage, Bounce | Complaint | None]:
    """The message's fields, and the bounce or complaint it is; one cut short at a limit
    is no report (DESIGN §9: stored, never acted on)."""
    parsed = parse(raw)
    if _stopped_at_a_limit(parsed) or parsed.message is None:
        return parsed, None
    return parsed, parse_report(raw, list(envelope_to), parsed.message)
