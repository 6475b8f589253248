"""A reply from an inbox: an ordinary outgoing email, from the inbox's address, that
threads where mail clients expect it.

The payload is what ``POST /emails`` takes, made here from the message replied to and
the SDK's options (``cc``, ``bcc``, ``html``, ``text``, ``subject``, ``reply_all``,
``attachments``, ``headers``), then sent through the same path as any email — its
validation, quota, idempotency, tracking and webhooks. ``In-Reply-To`` and
``References`` are mailbridge's to set (RFC 5322 §3.6.4): the caller's are refused, as
is a ``Reply-To``. When the email goes out, the filer puts it in the thread by those
headers (``_filing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mailbridge.errors import ValidationError
from mailbridge.mail.addresses import parse_recipient
from mailbridge.storage.tables import Inbox

SET_BY_MAILBRIDGE = frozenset({"in-reply-to", "references", "reply-to"})
MAX_REFERENCES = 20  # the newest ones: a long thread's header stays a sensible size


def sender(inbox: Inbox) -> str:
    return f"{inbox.from_name} <{inbox.email_address}>" if inbox.from_name else inbox.email_address


def reply_subject(subject: str | None) -> str:
    text = (subject or "").strip()
    return text if text.lower().startswith("re:") else f"Re: {text}".strip()


def custom_headers(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("`headers` must be an object of header names and values.")
    taken = sorted(name for name in value if str(name).lower() in SET_BY_MAILBRIDGE)
    if taken:
        raise ValidationError(
            f"`headers` cannot set {', '.join(taken)}: mailbridge sets In-Reply-To, "
            "References and Reply-To on a reply or a forward."
        )
    return dict(value)


def _addresses(values: Any) -> list[str]:
    found = []
    for value in values or []:
        address = parse_recipient(str(value))
        if address is not None:
            found.append(address.lower())
    return found


def reply_payload(
    inbox: Inbox, original: Mapping[str, Any], references: list[str], body: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``POST /emails`` body of a reply to ``original`` (a message view) from
    ``inbox``; ``references``: the original's own References (oldest first)."""
    if not body.get("html") and not body.get("text"):
        raise ValidationError("A reply needs `html` or `text`.")
    own = inbox.email_address
    if original.get("direction") == "outbound":
        to = _addresses(original.get("to"))
    else:
        to = _addresses(original.get("reply_to")) or _addresses([original.get("from")])
    if body.get("reply_all"):
        for address in _addresses(original.get("to")) + _addresses(original.get("cc")):
            if address != own and address not in to:
                to.append(address)
    to = [address for address in to if address != own]
    if not to:
        raise ValidationError("The message has no one to reply to.")
    message_id = original.get("message_id")
    chain = [*references, message_id] if message_id else list(references)
    headers = custom_headers(body.get("headers"))
    if message_id:
        headers["In-Reply-To"] = message_id
        headers["References"] = " ".join(chain[-MAX_REFERENCES:])
    payload: dict[str, Any] = {
        "from": sender(inbox),
        "to": to,
        "subject": body.get("subject") or reply_subject(original.get("subject")),
        "headers": headers,
    }
    for field in ("cc", "bcc", "html", "text", "attachments"):
        if body.get(field) is not None:
            payload[field] = body[field]
    return payload
