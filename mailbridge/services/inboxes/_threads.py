"""Threads of an inbox and their messages: list (newest activity first), read, move.

Folders: ``inbox``, ``archive``, ``spam``, ``sent`` (a thread only mailbridge wrote
in), ``trash``. Deleting a thread moves it to the trash; deleting it from the trash
removes it for good, as the runner does after ``MAILBRIDGE_INBOX_TRASH_RETENTION_DAYS``
(30); the received mail itself stays under ``/emails/receiving``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.services.inboxes._events import Snapshot, thread_updated
from mailbridge.services.inboxes._labels import labels_of
from mailbridge.services.inboxes._links import Links
from mailbridge.services.inboxes._search import unindex_threads
from mailbridge.services.inboxes._threading import message_ids
from mailbridge.storage.database import Database
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_within, is_uuid
from mailbridge.storage.tables import (
    Email,
    EmailAttachment,
    Inbox,
    InboxLabel,
    InboxMessage,
    InboxThread,
    InboxThreadLabel,
    Member,
    ReceivedAttachment,
    ReceivedEmail,
)

FOLDERS = ("inbox", "archive", "spam", "sent", "trash")
MOVE_FOLDERS = ("inbox", "archive", "spam", "trash")
UPDATABLE = frozenset({"read", "folder", "assignee_id"})
# Threads page by their newest message, not by when they began.
_BY_LATEST = SimpleNamespace(created_at=InboxThread.latest_at, id=InboxThread.id)
_MESSAGES = SimpleNamespace(created_at=InboxMessage.created_at, id=InboxMessage.id)


def _folders(value: str | None) -> list[str] | None:
    if value is None:
        return None
    folders = [each.strip() for each in value.split(",") if each.strip()]
    unknown = [each for each in folders if each not in FOLDERS]
    if unknown or not folders:
        raise ValidationError(f"`folders` must be among {', '.join(FOLDERS)}.")
    return folders


def _read(value: str | None) -> bool | None:
    if value is None:
        return None
    if value not in ("true", "false"):
        raise ValidationError("`read` must be true or false.")
    return value == "true"


async def list_threads(
    session: AsyncSession, inbox: Inbox, page: PageRequest, *, folders: str | None = None,
    labels: str | None = None, read: str | None = None, where: Sequence[Any] = (),
) -> Page[InboxThread]:  # fmt: skip
    """The inbox's threads, newest activity first; ``folders`` (comma list; default all
    but the trash), ``labels`` (label ids, comma list: threads with any of them), ``read``;
    ``where``: more conditions (a search's)."""
    query = select(InboxThread).where(InboxThread.inbox_id == inbox.id, *where)
    chosen = _folders(folders)
    if chosen is None:
        query = query.where(InboxThread.folder != "trash")
    else:
        query = query.where(InboxThread.folder.in_(chosen))
    wanted = _read(read)
    if wanted is not None:
        query = query.where(InboxThread.read.is_(wanted))
    if labels:
        ids = [each.strip() for each in labels.split(",") if each.strip()]
        if not all(is_uuid(each) for each in ids):
            raise ValidationError("`labels` must be label ids.")
        query = query.where(
            InboxThread.id.in_(
                select(InboxThreadLabel.thread_id).where(InboxThreadLabel.label_id.in_(ids))
            )
        )
    return await paginate(session, query, _BY_LATEST, page)


async def get_thread(session: AsyncSession, inbox: Inbox, thread_id: str) -> InboxThread:
    return await get_within(
        session, InboxThread, InboxThread.inbox_id, inbox.id, thread_id, "Thread"
    )


async def update_thread(
    session: AsyncSession, clock: Clock, thread: InboxThread, changes: Mapping[str, Any]
) -> InboxThread:
    """``read`` (every message with it), ``folder`` (a move) and ``assignee_id`` (a member
    of the team, or null)."""
    if not changes.keys() & UPDATABLE:
        raise ValidationError("Give `read`, `folder` or `assignee_id`.")
    before = await Snapshot.of(session, thread)
    if "assignee_id" in changes:
        thread.assignee_id = await assignee(session, thread.team_id, changes["assignee_id"])
    if "read" in changes:
        read = changes["read"]
        if not isinstance(read, bool):
            raise ValidationError("`read` must be true or false.")
        thread.read = read
        await session.execute(
            update(InboxMessage).where(InboxMessage.thread_id == thread.id).values(read=read)
        )
    if "folder" in changes:
        folder = changes["folder"]
        if folder not in MOVE_FOLDERS:
            raise ValidationError(f"`folder` must be one of {', '.join(MOVE_FOLDERS)}.")
        thread.folder = folder
        thread.trashed_at = clock.now() if folder == "trash" else None
    thread.updated_at = clock.now()
    await thread_updated(session, clock, thread, before)
    await session.commit()
    return thread


async def assignee(session: AsyncSession, team_id: str, member: Any) -> str | None:
    """The member ``member`` names (an id or an email) in the team; None for null."""
    if member is None:
        return None
    if not isinstance(member, str) or not member.strip():
        raise ValidationError("`assignee_id` must be a member's id or email, or null.")
    condition = Member.id == member if is_uuid(member) else Member.email == member.strip().lower()
    found = await session.scalar(select(Member.id).where(condition, Member.team_id == team_id))
    if found is None:
        raise ValidationError(f"{member} is not a member of this team.")
    return str(found)


async def delete_thread(session: AsyncSession, clock: Clock, thread: InboxThread) -> bool:
    """To the trash; from the trash, for good. Whether it was removed for good."""
    if thread.folder != "trash":
        await update_thread(session, clock, thread, {"folder": "trash"})
        return False
    await unindex_threads(session, [thread.id])
    await session.execute(delete(InboxThread).where(InboxThread.id == thread.id))
    await session.commit()
    return True


async def empty_trash(database: Database, clock: Clock, retention: timedelta) -> int:
    """Remove the threads in the trash longer than ``retention`` (a runner tick)."""
    async with database.session() as session:
        expired = list(
            await session.scalars(
                select(InboxThread.id).where(
                    InboxThread.folder == "trash",
                    InboxThread.trashed_at < clock.now() - retention,
                )
            )
        )
        await unindex_threads(session, expired)
        await session.execute(delete(InboxThread).where(InboxThread.id.in_(expired)))
        await session.commit()
    return len(expired)


async def thread_labels(
    session: AsyncSession, threads: Sequence[InboxThread]
) -> dict[str, list[InboxLabel]]:
    return await labels_of(session, [thread.id for thread in threads])


def thread_view(
    thread: InboxThread, labels: Sequence[InboxLabel], *, has_draft: bool = False
) -> dict[str, Any]:
    return {
        "id": thread.id,
        "subject": thread.subject,
        "from": thread.from_address,
        "to": list(thread.to or []),
        "cc": list(thread.cc or []),
        "bcc": [],
        "labels": [label_summary(label) for label in labels],
        "email_count": thread.email_count,
        "has_attachment": thread.has_attachment,
        "has_draft": has_draft,
        "read": thread.read,
        "received_at": isoformat_ms(thread.latest_at),
        "folder": thread.folder,
        "assignee_id": thread.assignee_id,
    }


def thread_summary(thread: InboxThread, labels: Sequence[InboxLabel]) -> dict[str, Any]:
    return {
        "object": "inbox_thread",
        "id": thread.id,
        "subject": thread.subject,
        "folder": thread.folder,
        "labels": [label_summary(label) for label in labels],
        "read": thread.read,
        "assignee_id": thread.assignee_id,
    }


def label_summary(label: InboxLabel) -> dict[str, Any]:
    return {"id": label.id, "name": label.name, "color": label.color}


# --- messages ------------------------------------------------------------------------


async def list_messages(
    session: AsyncSession, thread: InboxThread, page: PageRequest, links: Links | None = None
) -> tuple[Page[InboxMessage], dict[str, dict[str, Any]]]:
    """A page of the thread's messages, and each one's view (``links``: its files'
    download links)."""
    query = select(InboxMessage).where(InboxMessage.thread_id == thread.id)
    found = await paginate(session, query, _MESSAGES, page)
    return found, await message_views(session, found.items, links)


async def get_message(
    session: AsyncSession, thread: InboxThread, message_id: str, links: Links | None = None
) -> dict[str, Any]:
    message = await get_within(
        session, InboxMessage, InboxMessage.thread_id, thread.id, message_id, "Email"
    )
    return (await message_views(session, [message], links))[message.id]


async def message_references(session: AsyncSession, message_id: str) -> list[str]:
    """The References of a message of a thread (oldest first): a received message's own,
    a sent one's as mailbridge wrote them."""
    received = await session.get(ReceivedEmail, message_id)
    if received is not None:
        return message_ids(received.references, received.in_reply_to)
    email = await session.get(Email, message_id)
    if email is None:
        return []
    headers = {str(name).lower(): str(value) for name, value in (email.headers or {}).items()}
    return message_ids(headers.get("references"), headers.get("in-reply-to"))


def _file(
    attachment_id: str, filename: str | None, size: int | None, link: tuple[str | None, str | None]
) -> dict[str, Any]:
    url, expires_at = link
    item: dict[str, Any] = {"id": attachment_id, "filename": filename, "size": size}
    if url is not None:
        item["download_url"], item["expires_at"] = url, expires_at
    return item


async def message_views(
    session: AsyncSession, messages: Sequence[InboxMessage], links: Links | None = None
) -> dict[str, dict[str, Any]]:
    """Each message as the SDK's ``InboxMessage``, from the row it views; with ``links``,
    each file (received or sent) has a signed ``download_url`` that works for an hour."""
    inbound = [each.id for each in messages if each.direction == "inbound"]
    outbound = [each.id for each in messages if each.direction == "outbound"]
    received = {
        row.id: row
        for row in await session.scalars(select(ReceivedEmail).where(ReceivedEmail.id.in_(inbound)))
    }
    sent = {
        row.id: row for row in await session.scalars(select(Email).where(Email.id.in_(outbound)))
    }
    attachments: dict[str, list[dict[str, Any]]] = {}
    no_link: tuple[str | None, str | None] = (None, None)
    for item in await session.scalars(
        select(ReceivedAttachment)
        .where(ReceivedAttachment.received_email_id.in_(inbound))
        .order_by(ReceivedAttachment.position)
    ):
        link = links.received(item.id) if links else no_link
        attachments.setdefault(item.received_email_id, []).append(
            _file(item.id, item.filename, item.size, link)
        )
    for sent_file in await session.scalars(
        select(EmailAttachment)
        .where(EmailAttachment.email_id.in_(outbound))
        .order_by(EmailAttachment.created_at, EmailAttachment.id)
    ):
        link = links.sent(sent_file.id, sent_file.path) if links else no_link
        attachments.setdefault(sent_file.email_id, []).append(
            _file(sent_file.id, sent_file.filename, sent_file.size, link)
        )
    views: dict[str, dict[str, Any]] = {}
    for message in messages:
        base = {
            "object": "inbox_email", "id": message.id, "thread_id": message.thread_id,
            "direction": message.direction, "message_id": message.message_id,
            "read": message.read, "received_at": isoformat_ms(message.created_at),
            "attachments": attachments.get(message.id, []),
        }  # fmt: skip
        row = received.get(message.id)
        if row is not None:
            views[message.id] = {
                **base, "from": row.from_address or row.envelope_from, "to": list(row.to or []),
                "cc": list(row.cc or []), "bcc": [],
                "reply_to": _reply_to(row.headers), "subject": row.subject,
                "html": row.html, "text": row.text,
            }  # fmt: skip
            continue
        email = sent.get(message.id)
        if email is not None:
            views[message.id] = {
                **base, "from": email.from_address, "to": list(email.to or []),
                "cc": list(email.cc or []), "bcc": list(email.bcc or []),
                "reply_to": list(email.reply_to or []), "subject": email.subject,
                "html": email.html, "text": email.text,
            }  # fmt: skip
    return views


def _reply_to(headers: Mapping[str, Any] | None) -> list[str]:
    """The Reply-To addresses of a received message (headers: lower-case name → values)."""
    values = (headers or {}).get("reply-to") or []
    if isinstance(values, str):
        values = [values]
    return [part.strip() for value in values for part in str(value).split(",") if part.strip()]
