"""A reply from an inbox: an ordinary outgoing email, from the inbox's address, that
threads where mail clients expect it.

The payload is what ``POST /emails`` takes, made here from the message replied to and
the SDK's options (``cc``, ``bcc``, ``html``, ``text``, ``subject``, ``reply_all``,
``attachments``, ``headers``), then sent through the same path as any email — its
validation, quota, idempotency, tracking and webhooks. ``In-Reply-To`` and
``References`` are mailbridge's to set (RFC 5322 §3.6.4): the caller's are refused, as
is a ``Reply-To``. When the email goes out, the filer puts it in the thread by those
headers (``_filing``).

The message replied to is quoted below what the caller writes, as mail clients do — an
"On <date>, <sender> wrote:" line, then its text with ``> `` before each line (RFC 3676
§4.5) in the text part, and its HTML in a ``<blockquote type="cite">`` in the HTML part;
only the parts the caller wrote get one. ``"quote": false`` leaves it out (the SDKs have
no such option; it is mailbridge's).
"""

from __future__ import annotations

import html as markup
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mailbridge.errors import ValidationError
from mailbridge.mail.addresses import parse_recipient
from mailbridge.storage.tables import Inbox

SET_BY_MAILBRIDGE = frozenset({"in-reply-to", "references", "reply-to"})
MAX_REFERENCES = 20  # the newest ones: a long thread's header stays a sensible size
MAX_QUOTED = 50_000  # characters of the original quoted: a reply stays a sensible size


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


def _intro(original: Mapping[str, Any]) -> str:
    sender = str(original.get("from") or "the sender")
    try:
        when = datetime.fromisoformat(str(original.get("received_at")).replace("Z", "+00:00"))
    except ValueError:
        return f"{sender} wrote:"
    return f"On {when.strftime('%a, %d %b %Y at %H:%M UTC')}, {sender} wrote:"


def quoted(body: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, str]:
    """The caller's ``text`` and ``html`` with ``original`` quoted below each."""
    intro = _intro(original)
    parts: dict[str, str] = {}
    if isinstance(body.get("text"), str) and body["text"]:
        lines = str(original.get("text") or "")[:MAX_QUOTED].splitlines()
        cited = "\n".join(">" if not line else f"> {line}" for line in lines)
        parts["text"] = f"{body['text'].rstrip()}\n\n{intro}\n{cited}\n"
    if isinstance(body.get("html"), str) and body["html"]:
        source = original.get("html")
        inner = (
            str(source)[:MAX_QUOTED]
            if source
            else markup.escape(str(original.get("text") or "")[:MAX_QUOTED]).replace("\n", "<br>")
        )
        parts["html"] = (
            f"{body['html']}<br><div>{markup.escape(intro)}</div>"
            '<blockquote type="cite" style="margin:0 0 0 .8ex;border-left:1px solid #ccc;'
            f'padding-left:1ex">{inner}</blockquote>'
        )
    return parts


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
    if body.get("quote", True) is not False:
        payload.update(quoted(body, original))
    return payload
