"""Drafts of an inbox: a message being written — standalone, or a reply to a message of
a thread — then sent as an ordinary email from the inbox's address.

Files are stored on the draft: ``content`` (base64) as given, ``path`` downloaded when
the request is made (the attachments fetch policy: public http(s), a size limit, a
time limit); at most :data:`MAX_DRAFT_BYTES` in all. An ``Idempotency-Key`` on create
answers a repeat with the draft it made; on send it is the email's idempotency key,
so a send repeated after a lost answer sends once. A sent draft keeps its ``email_id``
and leaves the list; a reply draft's email threads like any reply (``_replies``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import httpx
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.mail.attachments import AttachmentFetchError, FetchPolicy, fetch_attachment
from mailbridge.services.inboxes._events import draft_sent
from mailbridge.services.inboxes._replies import custom_headers
from mailbridge.services.kernel import record_event
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_within
from mailbridge.storage.tables import Inbox, InboxDraft, InboxDraftAttachment

MAX_DRAFT_BYTES = 25 * 1024 * 1024
MAX_DRAFT_FILES = 10
CONTENT_FIELDS = ("to", "cc", "bcc", "subject", "text", "html")


def _address_list(value: Any, field: str) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(each, str) for each in values):
        raise ValidationError(f"`{field}` must be an address or a list of addresses.")
    if len(values) > 50:
        raise ValidationError(f"`{field}` takes at most 50 addresses.")
    return [each.strip() for each in values if each.strip()]


def _text(value: Any, field: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"`{field}` must be text.")
    return value


def _apply_content(draft: InboxDraft, body: Mapping[str, Any]) -> None:
    if "to" in body:
        draft.to = _address_list(body["to"], "to")
    for field in ("cc", "bcc"):
        if field in body:
            setattr(draft, field, _address_list(body[field], field) or [])
    for field in ("subject", "text", "html"):
        if field in body:
            setattr(draft, field, _text(body[field], field))


async def _files(
    body: Mapping[str, Any], policy: FetchPolicy
) -> list[tuple[str, str, bytes]] | None:
    """(filename, content type, bytes) of the body's ``attachments`` (None: not given)."""
    given = body.get("attachments")
    if "attachments" not in body:
        return None
    if given is None:
        return []
    if not isinstance(given, list) or len(given) > MAX_DRAFT_FILES:
        raise ValidationError(f"`attachments` must be a list of at most {MAX_DRAFT_FILES} files.")
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
        files = [await _file(item, client, policy) for item in given]
    if sum(len(content) for _name, _type, content in files) > MAX_DRAFT_BYTES:
        raise ValidationError("The files of a draft total at most 25 MB.")
    return files


async def _file(
    item: Any, client: httpx.AsyncClient, policy: FetchPolicy
) -> tuple[str, str, bytes]:
    if not isinstance(item, Mapping) or not isinstance(item.get("filename"), str):
        raise ValidationError("Each attachment needs a `filename`.")
    filename = item["filename"].strip()[:255] or "attachment"
    content_type = item.get("content_type") or "application/octet-stream"
    if not isinstance(content_type, str) or "/" not in content_type:
        raise ValidationError("`content_type` must be a MIME type.")
    if isinstance(item.get("content"), str):
        try:
            content = base64.b64decode(item["content"], validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError(f"The content of {filename} is not base64.") from None
    elif isinstance(item.get("path"), str):
        try:
            content = await fetch_attachment(client, item["path"], policy=policy)
        except AttachmentFetchError as exc:
            raise ValidationError(f"Could not download {filename}: {exc}") from None
    else:
        raise ValidationError(f"{filename} needs `content` or `path`.")
    if not content:
        raise ValidationError(f"{filename} is empty.")
    return filename, content_type[:255], content


async def _store_files(
    session: AsyncSession, draft: InboxDraft, files: list[tuple[str, str, bytes]]
) -> None:
    await session.execute(
        delete(InboxDraftAttachment).where(InboxDraftAttachment.draft_id == draft.id)
    )
    for position, (filename, content_type, content) in enumerate(files):
        session.add(
            InboxDraftAttachment(
                draft_id=draft.id, position=position, filename=filename,
                content_type=content_type, size=len(content), content=content,
            )
        )  # fmt: skip


async def create_draft(
    session: AsyncSession, clock: Clock, inbox: Inbox, body: Mapping[str, Any],
    policy: FetchPolicy, *, thread_id: str | None, reply_to: str | None,
    idempotency_key: str | None,
) -> InboxDraft:  # fmt: skip
    """A new draft (or, for a repeated ``idempotency_key``, the one it made)."""
    if idempotency_key is not None:
        found = await session.scalar(
            select(InboxDraft).where(
                InboxDraft.inbox_id == inbox.id, InboxDraft.idempotency_key == idempotency_key
            )
        )
        if found is not None:
            return found
    if not any(body.get(field) for field in (*CONTENT_FIELDS, "attachments")):
        raise ValidationError("A draft needs at least one of to, cc, bcc, subject, text, html.")
    files = await _files(body, policy)
    now = clock.now()
    draft = InboxDraft(
        team_id=inbox.team_id, inbox_id=inbox.id, thread_id=thread_id,
        reply_to_email_id=reply_to, cc=[], bcc=[], idempotency_key=idempotency_key,
        created_at=now, updated_at=now,
    )  # fmt: skip
    _apply_content(draft, body)
    session.add(draft)
    await session.flush()
    if files:
        await _store_files(session, draft, files)
    await draft_event(session, clock, draft, "inbox.draft.created")
    await session.commit()
    return draft


async def draft_event(
    session: AsyncSession, clock: Clock, draft: InboxDraft, type_: str, *, source: str = "api"
) -> None:
    """``inbox.draft.created``, ``.updated``, ``.deleted``: the draft without its bodies,
    as the SDKs' webhook types have it."""
    await session.flush()
    files = (await draft_files(session, [draft.id]))[draft.id]
    data = {
        "source": source, "inbox_id": draft.inbox_id, "thread_id": draft.thread_id,
        "draft_id": draft.id, "draft": {"object": "inbox_draft", **_draft_fields(draft, files)},
    }  # fmt: skip
    record_event(session, clock, draft.team_id, type_, data)


async def get_draft(session: AsyncSession, inbox: Inbox, draft_id: str) -> InboxDraft:
    return await get_within(session, InboxDraft, InboxDraft.inbox_id, inbox.id, draft_id, "Draft")


async def list_drafts(session: AsyncSession, inbox: Inbox, page: PageRequest) -> Page[InboxDraft]:
    query = select(InboxDraft).where(InboxDraft.inbox_id == inbox.id, InboxDraft.email_id.is_(None))
    return await paginate(session, query, InboxDraft, page)


async def update_draft(
    session: AsyncSession, clock: Clock, draft: InboxDraft, body: Mapping[str, Any],
    policy: FetchPolicy,
) -> InboxDraft:  # fmt: skip
    if draft.email_id is not None:
        raise ValidationError("The draft was sent; it can no longer change.")
    if not any(field in body for field in (*CONTENT_FIELDS, "attachments")):
        raise ValidationError("Give at least one of to, cc, bcc, subject, text, html, attachments.")
    files = await _files(body, policy)
    _apply_content(draft, body)
    if files is not None:
        await _store_files(session, draft, files)
    draft.updated_at = clock.now()
    await draft_event(session, clock, draft, "inbox.draft.updated")
    await session.commit()
    return draft


async def delete_draft(session: AsyncSession, clock: Clock, draft: InboxDraft) -> None:
    await draft_event(session, clock, draft, "inbox.draft.deleted")
    await session.delete(draft)
    await session.commit()


async def draft_files(
    session: AsyncSession, draft_ids: list[str]
) -> dict[str, list[InboxDraftAttachment]]:
    found: dict[str, list[InboxDraftAttachment]] = {draft_id: [] for draft_id in draft_ids}
    rows = await session.scalars(
        select(InboxDraftAttachment)
        .where(InboxDraftAttachment.draft_id.in_(draft_ids))
        .order_by(InboxDraftAttachment.position)
    )
    for row in rows:
        found[row.draft_id].append(row)
    return found


async def open_drafts(session: AsyncSession, inbox_ids: list[str]) -> dict[str, int]:
    """How many unsent drafts each inbox has."""
    rows = await session.execute(
        select(InboxDraft.inbox_id, func.count())
        .where(InboxDraft.inbox_id.in_(inbox_ids), InboxDraft.email_id.is_(None))
        .group_by(InboxDraft.inbox_id)
    )
    return {inbox_id: int(count) for inbox_id, count in rows.tuples()}


async def threads_with_drafts(session: AsyncSession, thread_ids: list[str]) -> set[str]:
    rows = await session.scalars(
        select(InboxDraft.thread_id).where(
            InboxDraft.thread_id.in_(thread_ids), InboxDraft.email_id.is_(None)
        )
    )
    return {thread_id for thread_id in rows if thread_id is not None}


def _attachment_summary(item: InboxDraftAttachment) -> dict[str, Any]:
    return {"id": item.id, "filename": item.filename, "content_type": item.content_type,
            "size": item.size}  # fmt: skip


def _draft_fields(draft: InboxDraft, files: list[InboxDraftAttachment]) -> dict[str, Any]:
    return {
        "id": draft.id,
        "type": "reply" if draft.reply_to_email_id else "standalone",
        "to": draft.to,
        "cc": list(draft.cc or []),
        "bcc": list(draft.bcc or []),
        "subject": draft.subject,
        "thread_id": draft.thread_id,
        "reply_to_email_id": draft.reply_to_email_id,
        "updated_at": isoformat_ms(draft.updated_at),
        "attachments": [_attachment_summary(item) for item in files],
    }


def draft_view(draft: InboxDraft, files: list[InboxDraftAttachment]) -> dict[str, Any]:
    return {
        "object": "inbox_draft",
        **_draft_fields(draft, files),
        "html": draft.html,
        "text": draft.text,
        "email_id": draft.email_id,
        "created_at": isoformat_ms(draft.created_at),
    }


def draft_list_item(draft: InboxDraft, files: list[InboxDraftAttachment]) -> dict[str, Any]:
    """A list's draft: a snippet of the text instead of the bodies."""
    snippet = " ".join((draft.text or "").split())[:200] or None
    return {**_draft_fields(draft, files), "snippet": snippet}


def send_payload(
    draft: InboxDraft, files: list[InboxDraftAttachment], headers: Any
) -> dict[str, Any]:
    """The ``POST /emails`` body of a standalone draft (a reply's is ``reply_payload``'s)."""
    if not draft.to:
        raise ValidationError("The draft has no `to`.")
    if not draft.html and not draft.text:
        raise ValidationError("The draft has neither `html` nor `text`.")
    payload: dict[str, Any] = {
        "to": list(draft.to), "cc": list(draft.cc or []), "bcc": list(draft.bcc or []),
        "subject": draft.subject or "", "attachments": attachment_payload(files),
    }  # fmt: skip
    for field in ("html", "text"):
        if getattr(draft, field):
            payload[field] = getattr(draft, field)
    if headers is not None:
        payload["headers"] = custom_headers(headers)  # In-Reply-To & co. are not the caller's
    return payload


def attachment_payload(files: list[InboxDraftAttachment]) -> list[dict[str, Any]]:
    return [
        {"filename": item.filename, "content_type": item.content_type,
         "content": base64.b64encode(item.content).decode("ascii")}
        for item in files
    ]  # fmt: skip


async def mark_sent(session: AsyncSession, clock: Clock, draft: InboxDraft, email_id: str) -> None:
    draft.email_id = email_id
    draft.updated_at = clock.now()
    draft_sent(session, clock, draft, email_id)
    await session.commit()
