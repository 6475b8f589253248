"""What an inbox records besides filed mail, for webhooks: a thread moved, (un)assigned,
labelled or read, and a draft sent.

A change is told the way the SDKs' webhook types tell it — ``inbox.thread.folder.updated``
(``from``, ``to``), ``inbox.thread.assigned`` / ``inbox.thread.unassigned`` (the
members' emails), ``inbox.thread.labels.updated`` (``added``, ``removed``) — and, for a
subscriber who wants one event a change, as ``inbox.thread.updated`` (``changed``: which
of ``folder``, ``assignee_id``, ``labels``, ``read``). Each carries ``source`` (``api``,
``agent``, ``system`` for an automation's step), ``inbox_id``, ``thread_id`` and the
``thread`` as it is now. A caller takes a :class:`Snapshot` before changing a thread and
calls :func:`thread_updated` after; only what differs is recorded, in the transaction of
the change (``record_event``).

None of these starts automations (``triggers.activity`` makes engine events of a
conversation's mail only), so a step that labels a thread cannot start again the
automation that labelled it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.services.kernel import record_event
from mailbridge.storage.tables import (
    InboxDraft,
    InboxLabel,
    InboxThread,
    InboxThreadLabel,
    Member,
)


async def _labels(session: AsyncSession, thread_id: str) -> dict[str, dict[str, str]]:
    rows = await session.scalars(
        select(InboxLabel)
        .join(InboxThreadLabel, InboxThreadLabel.label_id == InboxLabel.id)
        .where(InboxThreadLabel.thread_id == thread_id)
        .order_by(InboxLabel.name)
    )
    return {label.id: {"id": label.id, "name": label.name, "color": label.color} for label in rows}


@dataclass(frozen=True)
class Snapshot:
    """What of a thread its events tell, before a change."""

    folder: str
    read: bool
    assignee_id: str | None
    labels: dict[str, dict[str, str]]

    @classmethod
    async def of(cls, session: AsyncSession, thread: InboxThread) -> Snapshot:
        labels = await _labels(session, thread.id)
        return cls(thread.folder, thread.read, thread.assignee_id, labels)


async def _email_of(session: AsyncSession, member_id: str | None) -> str | None:
    if member_id is None:
        return None
    email: str | None = await session.scalar(select(Member.email).where(Member.id == member_id))
    return email


async def thread_updated(
    session: AsyncSession, clock: Clock, thread: InboxThread, before: Snapshot,
    *, source: str = "api",
) -> None:  # fmt: skip
    """Record the events of what changed in ``thread`` since ``before``."""
    await session.flush()
    after = await Snapshot.of(session, thread)
    base: dict[str, Any] = {
        "source": source, "inbox_id": thread.inbox_id, "thread_id": thread.id,
        "thread": {
            "object": "inbox_thread", "id": thread.id, "subject": thread.subject,
            "folder": after.folder, "labels": list(after.labels.values()), "read": after.read,
        },
    }  # fmt: skip
    changed: list[str] = []

    def told(type_: str, **data: Any) -> None:
        record_event(session, clock, thread.team_id, type_, {**base, **data})

    if after.folder != before.folder:
        changed.append("folder")
        told("inbox.thread.folder.updated", **{"from": before.folder, "to": after.folder})
    if after.assignee_id != before.assignee_id:
        changed.append("assignee_id")
        previous = await _email_of(session, before.assignee_id)
        if after.assignee_id is None:
            told("inbox.thread.unassigned", previous_assignee_email=previous)
        else:
            told(
                "inbox.thread.assigned", assignee_email=await _email_of(session, after.assignee_id),
                assigned_by_email=None, previous_assignee_email=previous,
            )  # fmt: skip
    added = [label for key, label in after.labels.items() if key not in before.labels]
    removed = [label for key, label in before.labels.items() if key not in after.labels]
    if added or removed:
        changed.append("labels")
        told("inbox.thread.labels.updated", added=added, removed=removed)
    if after.read != before.read:
        changed.append("read")
    if changed:
        told("inbox.thread.updated", changed=sorted(changed))


def draft_sent(session: AsyncSession, clock: Clock, draft: InboxDraft, email_id: str) -> None:
    data = {
        "source": "api", "inbox_id": draft.inbox_id, "thread_id": draft.thread_id,
        "draft_id": draft.id, "email_id": email_id, "to": list(draft.to or []),
        "subject": draft.subject,
    }  # fmt: skip
    record_event(session, clock, draft.team_id, "inbox.draft.sent", data)
