"""Forwarding a message of a thread: an ordinary email from the inbox's address to new
recipients, the original quoted inline below what the caller writes (a "Forwarded
message" block: From, Date, Subject, To, then the original's text and HTML) and its
files attached again — or, with ``"attach_original": true`` (mailbridge's option; the
SDK's receiving forward does the same when not ``passthrough``), a received original
attached whole as ``forwarded_message.eml`` (``message/rfc822``) under the caller's words.

The original's files are read back — a received message's from their blobs, a sent
one's stored content; a sent file that was fetched from a URL was never stored, so it
cannot be forwarded (422), as the SDK documents. The caller's ``attachments`` join them,
within the send path's limits. ``In-Reply-To``/``References``/``Reply-To`` are not the
caller's to set, as on a reply.
"""

from __future__ import annotations

import base64
import html as markup
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.services import inbound
from mailbridge.services.inboxes._replies import custom_headers, sender
from mailbridge.storage.tables import EmailAttachment, Inbox, ReceivedAttachment

MARK = "---------- Forwarded message ---------"


def forward_subject(subject: str | None) -> str:
    text = (subject or "").strip()
    return text if text.lower().startswith(("fwd:", "fw:")) else f"Fwd: {text}".strip()


def _quoted_lines(original: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        ("From", str(original.get("from") or "")),
        ("Date", str(original.get("received_at") or "")),
        ("Subject", str(original.get("subject") or "")),
        ("To", ", ".join(original.get("to") or [])),
    ]


def _text(body: Mapping[str, Any], original: Mapping[str, Any]) -> str:
    head = "\n".join(f"{name}: {value}" for name, value in _quoted_lines(original))
    own = body.get("text") or ""
    return f"{own}\n\n{MARK}\n{head}\n\n{original.get('text') or ''}".lstrip("\n")


def _html(body: Mapping[str, Any], original: Mapping[str, Any]) -> str:
    own = body.get("html") or markup.escape(body.get("text") or "").replace("\n", "<br>")
    head = "<br>".join(f"{name}: {markup.escape(value)}" for name, value in _quoted_lines(original))
    quoted = original.get("html") or markup.escape(original.get("text") or "").replace("\n", "<br>")
    return (
        f"{own}<br><br><div>{MARK}<br>{head}</div>"
        f'<blockquote style="margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex">'
        f"{quoted}</blockquote>"
    )


async def original_files(
    session: AsyncSession, data_dir: Path, original: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The original's files as ``POST /emails`` attachments (base64 content)."""
    email_id = str(original["id"])
    files: list[dict[str, Any]] = []
    if original.get("direction") == "inbound":
        rows = await session.scalars(
            select(ReceivedAttachment)
            .where(ReceivedAttachment.received_email_id == email_id)
            .order_by(ReceivedAttachment.position)
        )
        for item in rows:
            content = await inbound.attachment_content(session, data_dir, item)
            files.append(_file(item.filename or "attachment", item.content_type, content))
        return files
    for attachment in await session.scalars(
        select(EmailAttachment).where(EmailAttachment.email_id == email_id)
    ):
        if attachment.content is None:
            raise ValidationError(
                f"{attachment.filename} was sent from a URL (`path`); it cannot be forwarded."
            )
        files.append(_file(attachment.filename, attachment.content_type, attachment.content))
    return files


def _file(filename: str, content_type: str, content: bytes) -> dict[str, Any]:
    return {
        "filename": filename,
        "content_type": content_type,
        "content": base64.b64encode(content).decode("ascii"),
    }


def attaches_original(body: Mapping[str, Any]) -> bool:
    """Whether the forward attaches the original whole (``"attach_original": true``)."""
    value = body.get("attach_original", False)
    if not isinstance(value, bool):
        raise ValidationError("`attach_original` must be true or false.")
    return value


async def original_message(
    session: AsyncSession, data_dir: Path, original: Mapping[str, Any]
) -> dict[str, Any]:
    """A received original's bytes as a ``message/rfc822`` attachment; a sent message
    has no stored original to attach (422: forward it inline)."""
    if original.get("direction") != "inbound":
        raise ValidationError(
            "`attach_original` forwards a received message; a sent one is forwarded inline."
        )
    raw = await inbound.raw_for_download(session, data_dir, str(original["id"]))
    return _file("forwarded_message.eml", "message/rfc822", raw)


async def forward_files(
    session: AsyncSession, data_dir: Path, original: Mapping[str, Any],
    body: Mapping[str, Any],
) -> list[dict[str, Any]]:  # fmt: skip
    """What a forward attaches of ``original``: the original whole, when ``body`` asks
    for it, else its files."""
    if attaches_original(body):
        return [await original_message(session, data_dir, original)]
    return await original_files(session, data_dir, original)


def forward_payload(
    inbox: Inbox, original: Mapping[str, Any], body: Mapping[str, Any],
    files: list[dict[str, Any]],
) -> dict[str, Any]:  # fmt: skip
    """The ``POST /emails`` body forwarding ``original`` (a message view) from ``inbox``;
    ``files``: the original's files (inline), or the original itself (attached whole)."""
    if not body.get("to"):
        raise ValidationError("A forward needs `to`.")
    own_files = body.get("attachments") or []
    if not isinstance(own_files, list):
        raise ValidationError("`attachments` must be a list.")
    payload: dict[str, Any] = {
        "from": sender(inbox),
        "to": body["to"],
        "subject": body.get("subject") or forward_subject(original.get("subject")),
        "headers": custom_headers(body.get("headers")),
        "attachments": [*own_files, *files],
    }
    if attaches_original(body):
        payload["text"] = body.get("text") or ("" if body.get("html") else "Forwarded message.")
        if body.get("html"):
            payload["html"] = body["html"]
    else:
        payload["text"], payload["html"] = _text(body, original), _html(body, original)
    for field in ("cc", "bcc"):
        if body.get(field) is not None:
            payload[field] = body[field]
    return payload
