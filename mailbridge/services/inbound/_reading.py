"""Reading received mail (spec §4.12, §8.3): lists, the full record, attachments.

Lists take ``limit`` optionally: without it up to 1,000 items (``has_more`` says when
there are more), with it 1 to 100; ``after``/``before`` cursors as everywhere. The full
record carries a signed ``raw_url`` (the original bytes); attachments a signed
``download_url`` each, and their bytes in base64 with ``content=true``. Links work
for an hour without a key: the signature is the authority.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import formataddr, getaddresses
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.mail.signed_links import RECEIVED_ATTACHMENT, RECEIVED_RAW, received_url
from mailbridge.services.inbound._blobs import cache_blobs, read_blob, read_verified, stage_blob
from mailbridge.services.inbound._parse_worker import read_bounded
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned, is_uuid
from mailbridge.storage.tables import ReceivedAttachment, ReceivedEmail

UNPAGED_LIMIT = 1000
LINK_LIFETIME = timedelta(hours=1)


def receiving_page(limit: str | None, after: str | None, before: str | None) -> PageRequest:
    """Spec §8.3 for the receiving lists: ``limit`` optional, up to 1,000 without it."""
    page = PageRequest.parse(limit, after, before)
    if limit is None:
        return PageRequest(limit=UNPAGED_LIMIT, after=page.after, before=page.before)
    return page


@dataclass(frozen=True)
class Links:
    base_url: str
    secret: bytes
    now: datetime

    def url(self, purpose: str, object_id: str) -> tuple[str, str | None]:
        expires_at = (self.now + LINK_LIFETIME).replace(microsecond=0)
        url = received_url(self.base_url, self.secret, purpose, object_id, expires_at)
        return url, isoformat_ms(expires_at)


def _addresses(headers: dict[str, Any], name: str) -> list[str] | None:
    """The addresses of a header as received (``Name <a@b>`` or ``a@b``); None if absent."""
    value = headers.get(name)
    if value is None:
        return None
    values = [str(item) for item in value] if isinstance(value, list) else [str(value)]
    return [formataddr(pair) if pair[0] else pair[1] for pair in getaddresses(values) if pair[1]]


def received_summary(
    row: ReceivedEmail, attachments: Sequence[ReceivedAttachment] = ()
) -> dict[str, Any]:
    """A list item, in Resend's receiving shape (``object: "email"``) and ours."""
    return {
        "object": "email",
        "id": row.id,
        "from": row.from_address,
        "to": row.to,
        "cc": row.cc,
        "bcc": _addresses(row.headers or {}, "bcc"),
        "reply_to": _addresses(row.headers or {}, "reply-to"),
        "received_for": [row.recipient] if row.recipient else list(row.envelope_to),
        "subject": row.subject,
        "message_id": row.message_id,
        "kind": row.kind,
        "email_id": row.email_id,
        "created_at": isoformat_ms(row.created_at),
        "attachments": [attachment_summary(item) for item in attachments],
    }


def received_view(
    row: ReceivedEmail, attachments: list[ReceivedAttachment], links: Links
) -> dict[str, Any]:
    raw_url, expires = links.url(RECEIVED_RAW, row.id)
    return {
        **received_summary(row),
        "envelope_from": row.envelope_from,
        "envelope_to": row.envelope_to,
        "in_reply_to": row.in_reply_to,
        "references": row.references,
        "text": row.text,
        "html": row.html,
        "headers": row.headers,
        "spf": row.spf,
        "dkim": row.dkim,
        "dmarc": row.dmarc,
        "size": row.size,
        "parse_error": row.parse_error,
        "unmatched_reason": row.unmatched_reason,
        "raw": {"download_url": raw_url, "expires_at": expires},  # Resend's SDKs read this
        "raw_url": raw_url,
        "raw_url_expires_at": expires,
        "attachments": [attachment_view(item, links) for item in attachments],
    }


def attachment_summary(item: ReceivedAttachment) -> dict[str, Any]:
    return {
        "id": item.id,
        "filename": item.filename,
        "content_type": item.content_type,
        "content_id": item.content_id,
        "content_disposition": "inline" if item.content_id else "attachment",
        "size": item.size,
    }


def attachment_view(
    item: ReceivedAttachment, links: Links, content: bytes | None = None
) -> dict[str, Any]:
    url, expires = links.url(RECEIVED_ATTACHMENT, item.id)
    view: dict[str, Any] = {
        "object": "attachment",
        **attachment_summary(item),
        "checksum": item.checksum,
        "download_url": url,
        "expires_at": expires,
    }
    if content is not None:
        view["content"] = base64.b64encode(content).decode("ascii")
    return view


async def list_received(
    session: AsyncSession, team_id: str, page: PageRequest
) -> Page[ReceivedEmail]:
    query = select(ReceivedEmail).where(ReceivedEmail.team_id == team_id)
    return await paginate(session, query, ReceivedEmail, page)


async def get_received(session: AsyncSession, team_id: str, received_id: str) -> ReceivedEmail:
    return await get_owned(session, ReceivedEmail, team_id, received_id, "Received email")


async def attachments_of(session: AsyncSession, received_id: str) -> list[ReceivedAttachment]:
    rows = await session.scalars(
        select(ReceivedAttachment)
        .where(ReceivedAttachment.received_email_id == received_id)
        .order_by(ReceivedAttachment.position)
    )
    return list(rows.all())


async def attachments_of_many(
    session: AsyncSession, received_ids: Sequence[str]
) -> dict[str, list[ReceivedAttachment]]:
    """The attachments of each of ``received_ids`` (one query for a list page)."""
    found: dict[str, list[ReceivedAttachment]] = {}
    if received_ids:
        rows = await session.scalars(
            select(ReceivedAttachment)
            .where(ReceivedAttachment.received_email_id.in_(list(received_ids)))
            .order_by(ReceivedAttachment.received_email_id, ReceivedAttachment.position)
        )
        for row in rows:
            found.setdefault(row.received_email_id, []).append(row)
    return found


async def get_attachment(
    session: AsyncSession, team_id: str, received_id: str, attachment_id: str
) -> ReceivedAttachment:
    await get_received(session, team_id, received_id)
    item = await session.get(ReceivedAttachment, attachment_id) if is_uuid(attachment_id) else None
    if item is None or item.received_email_id != received_id:
        raise NotFound("Attachment not found.")
    return item


async def list_attachments(
    session: AsyncSession, team_id: str, received_id: str, page: PageRequest
) -> Page[ReceivedAttachment]:
    await get_received(session, team_id, received_id)
    query = select(ReceivedAttachment).where(ReceivedAttachment.received_email_id == received_id)
    return await paginate(session, query, ReceivedAttachment, page)


async def attachment_content(session: AsyncSession, root: Path, item: ReceivedAttachment) -> bytes:
    """An attachment's bytes: its own blob (a cache), else read again from its message —
    the part whose bytes hash to the stored checksum (positions shifted when forwarded
    messages became attachments of their own), parsed within the listener's bounds."""
    cached = await asyncio.to_thread(read_verified, root, item.checksum)
    if cached is not None:
        return cached
    message = await session.get(ReceivedEmail, item.received_email_id)
    if message is None:
        raise NotFound("Attachment not found.")
    raw = await asyncio.to_thread(read_blob, root, message.blob)
    parsed, _report = await read_bounded(raw, ())
    staged = next(
        (blob for blob in map(stage_blob, (a.content for a in parsed.attachments))
         if blob.name == item.checksum),
        None,
    )  # fmt: skip
    if staged is None:
        raise NotFound("Attachment not found.")
    await asyncio.to_thread(partial(cache_blobs, replace=True), root, [staged])
    return staged.data


async def raw_for_download(session: AsyncSession, root: Path, received_id: str) -> bytes:
    """A received email's original bytes, named by a signed link."""
    row = await session.get(ReceivedEmail, received_id)
    if row is None:
        raise NotFound("Received email not found.")
    return await asyncio.to_thread(read_blob, root, row.blob)  # a file of up to tens of MB


async def attachment_for_download(session: AsyncSession, attachment_id: str) -> ReceivedAttachment:
    item = await session.get(ReceivedAttachment, attachment_id)
    if item is None:
        raise NotFound("Attachment not found.")
    return item


def check_flag(value: str | None, name: str) -> bool:
    if value is None:
        return False
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise ValidationError(f"`{name}` must be true or false.")
