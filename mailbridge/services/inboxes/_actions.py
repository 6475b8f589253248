"""What an automation's inbox step does to a thread, inside the engine's transaction
(nothing here commits: the run's step record and its effect commit together).

``archive``, ``mark_as_spam``, ``move_to_trash`` move the thread; ``add_labels`` puts
labels on it by name, making a label the inbox lacks (in the default colour);
``assign_thread`` gives it to a member of the team (by email);
``draft_reply`` writes a draft replying to the thread's latest received message — never
sent by itself: a member reads and sends it. ``forward_thread`` is composed here
(:func:`thread_forward`) and sent by the caller's mailer, in the same transaction.
Every change records ``inbox.thread.updated`` with its ``source``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ValidationError
from mailbridge.services.inboxes._drafts import draft_event
from mailbridge.services.inboxes._events import Snapshot, thread_updated
from mailbridge.services.inboxes._forwards import forward_files, forward_payload
from mailbridge.services.inboxes._labels import DEFAULT_COLOR
from mailbridge.services.inboxes._threads import assignee, message_views
from mailbridge.storage.tables import (
    Inbox,
    InboxDraft,
    InboxLabel,
    InboxMessage,
    InboxThread,
    InboxThreadLabel,
)

FOLDER_OF = {"archive": "archive", "mark_as_spam": "spam", "move_to_trash": "trash"}


async def _thread(session: AsyncSession, team_id: str, thread_id: str) -> InboxThread | None:
    query = select(InboxThread).where(InboxThread.id == thread_id, InboxThread.team_id == team_id)
    thread: InboxThread | None = await session.scalar(query)
    return thread


async def act_on_thread(
    session: AsyncSession, clock: Clock, team_id: str, thread_id: str, action: str,
    options: Mapping[str, Any], *, source: str = "system",
) -> str | None:  # fmt: skip
    """Do ``action`` to the team's thread; None when done, else why not. ``source``: who
    asks, for the events (``system``: an automation's step; ``agent``)."""
    thread = await _thread(session, team_id, thread_id)
    if thread is None:
        return "the thread no longer exists"
    before = await Snapshot.of(session, thread)
    now = clock.now()
    if action in FOLDER_OF:
        thread.folder = FOLDER_OF[action]
        thread.trashed_at = now if thread.folder == "trash" else None
    elif action == "add_labels":
        names = options.get("labels")
        if not isinstance(names, list) or not names:
            return "add_labels needs `labels`: a list of label names"
        await _add_labels(session, thread, [str(name) for name in names])
    elif action == "assign_thread":
        try:
            thread.assignee_id = await assignee(session, team_id, options.get("assignee"))
        except ValidationError as refused:
            return str(refused)
    elif action == "draft_reply":
        latest = await session.scalar(
            select(InboxMessage)
            .where(InboxMessage.thread_id == thread.id, InboxMessage.direction == "inbound")
            .order_by(InboxMessage.created_at.desc(), InboxMessage.id.desc())
            .limit(1)
        )
        if latest is None:
            return "the thread has no received message to reply to"
        draft = InboxDraft(
            team_id=team_id, inbox_id=thread.inbox_id, thread_id=thread.id,
            reply_to_email_id=latest.id, cc=[], bcc=[], subject=options.get("subject"),
            text=options.get("text"), html=options.get("html"), created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(draft)
        await draft_event(session, clock, draft, "inbox.draft.created", source=source)
    else:
        return f"unknown inbox action {action!r}"
    thread.updated_at = now
    await thread_updated(session, clock, thread, before, source=source)
    await session.flush()
    return None


async def thread_forward(
    session: AsyncSession, data_dir: Path, team_id: str, thread_id: str,
    options: Mapping[str, Any],
) -> dict[str, Any] | str:  # fmt: skip
    """The ``POST /emails`` body forwarding a message of the team's thread to
    ``options["to"]`` (with ``text`` above it): ``email_id``'s message when it is of the
    thread, else the thread's latest received one. A string: why there is none."""
    thread = await _thread(session, team_id, thread_id)
    if thread is None:
        return "the thread no longer exists"
    inbox = await session.get(Inbox, thread.inbox_id)
    assert inbox is not None  # a thread goes with its inbox
    query = select(InboxMessage).where(InboxMessage.thread_id == thread.id)
    wanted = options.get("email_id")
    message = await session.scalar(query.where(InboxMessage.id == wanted)) if wanted else None
    if message is None:
        message = await session.scalar(
            query.where(InboxMessage.direction == "inbound")
            .order_by(InboxMessage.created_at.desc(), InboxMessage.id.desc())
            .limit(1)
        )
    if message is None:
        return "the thread has no received message to forward"
    original = (await message_views(session, [message]))[message.id]
    body = {
        "to": options.get("to"), "text": options.get("text"),
        "attach_original": bool(options.get("attach_original")),
    }  # fmt: skip
    try:
        files = await forward_files(session, data_dir, original, body)
        return forward_payload(inbox, original, body, files)
    except ValidationError as refused:
        return str(refused)


async def _add_labels(session: AsyncSession, thread: InboxThread, names: list[str]) -> None:
    now = thread.updated_at
    found = {
        label.name: label
        for label in await session.scalars(
            select(InboxLabel).where(InboxLabel.inbox_id == thread.inbox_id)
        )
    }
    have = set(
        await session.scalars(
            select(InboxThreadLabel.label_id).where(InboxThreadLabel.thread_id == thread.id)
        )
    )
    for name in dict.fromkeys(each.strip()[:100] for each in names if each.strip()):
        label = found.get(name)
        if label is None:
            label = found[name] = InboxLabel(
                team_id=thread.team_id, inbox_id=thread.inbox_id, name=name,
                color=DEFAULT_COLOR, created_at=now, updated_at=now,
            )  # fmt: skip
            session.add(label)
            await session.flush()
        if label.id not in have:
            session.add(InboxThreadLabel(thread_id=thread.id, label_id=label.id, created_at=now))
            have.add(label.id)
