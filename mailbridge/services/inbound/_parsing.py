"""A received message's fields, read with the standard library's parser (``policy.default``).

Never raises: a message that does not parse keeps what could be read and a
``parse_error``, and is stored and listed like any other.
"""

from __future__ import annotations

import email
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.utils import getaddresses
from typing import Any

from mailbridge.mail.inbound_reports import referenced_message_ids

MAX_HEADER_VALUE = 4000


@dataclass(frozen=True)
class Attachment:
    filename: str | None
    content_type: str
    content_id: str | None
    content: bytes


@dataclass
class ParsedMessage:
    message: EmailMessage | None = None
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


def _text(value: object) -> str | None:
    if value is None:
        return None
    return str(value).replace("\x00", "")[:MAX_HEADER_VALUE]


def _addresses(message: Message, name: str) -> list[str]:
    values = [str(value) for value in message.get_all(name, [])]
    return [address for _name, address in getaddresses(values) if address]


def _body(message: EmailMessage, kind: str) -> str | None:
    part = message.get_body(preferencelist=(kind,))
    if part is None:
        return None
    content = part.get_content()
    return content.replace("\x00", "") if isinstance(content, str) else None


def _attachments(message: EmailMessage) -> list[Attachment]:
    found = []
    for part in message.walk():
        if part.is_multipart():
            continue
        disposition = part.get_content_disposition()
        filename = part.get_filename()
        if disposition != "attachment" and filename is None:
            continue
        payload = part.get_payload(decode=True)
        found.append(Attachment(
            filename=_text(filename), content_type=part.get_content_type(),
            content_id=_text(part.get("Content-ID")),
            content=payload if isinstance(payload, bytes) else b"",
        ))  # fmt: skip
    return found


def parse(raw: bytes) -> ParsedMessage:
    parsed = ParsedMessage()
    try:
        message = email.message_from_bytes(raw, policy=policy.default)
        assert isinstance(message, EmailMessage)
        parsed.message = message
        parsed.from_address = _text(message.get("From"))
        parsed.to = _addresses(message, "To")
        parsed.cc = _addresses(message, "Cc")
        parsed.subject = _text(message.get("Subject"))
        parsed.message_id = _text(message.get("Message-ID"))
        parsed.in_reply_to = _text(message.get("In-Reply-To"))
        parsed.references = referenced_message_ids(message)
        headers: dict[str, Any] = {}
        for name, value in message.items():
            headers.setdefault(name.lower(), []).append(_text(value))
        parsed.headers = {k: v[0] if len(v) == 1 else v for k, v in headers.items()}
        parsed.text = _body(message, "plain")
        parsed.html = _body(message, "html")
        parsed.attachments = _attachments(message)
    except Exception as exc:  # any malformed input: keep what was read, say why
        parsed.parse_error = f"{type(exc).__name__}: {exc}"[:1000]
    return parsed
