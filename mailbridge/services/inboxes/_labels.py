"""Labels of an inbox (a name and a ``#RRGGBB`` colour), put on its threads."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import Conflict, ValidationError
from mailbridge.services.inboxes._events import Snapshot, thread_updated
from mailbridge.storage.queries import get_within
from mailbridge.storage.tables import Inbox, InboxLabel, InboxThread, InboxThreadLabel

COLOR = re.compile(r"#[0-9A-Fa-f]{6}")
DEFAULT_COLOR = "#6B7280"
MAX_LABEL_NAME = 100
MAX_LABELS_AT_ONCE = 10


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > MAX_LABEL_NAME:
        raise ValidationError(f"`name` must be 1 to {MAX_LABEL_NAME} characters.")
    return value.strip()


def _color(value: Any) -> str:
    if not isinstance(value, str) or not COLOR.fullmatch(value):
        raise ValidationError("`color` must be a colour in the #RRGGBB form.")
    return value.upper()


async def _commit_unique(session: AsyncSession, name: str) -> None:
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise Conflict("label_exists", f"The inbox already has a label named {name!r}.") from None


async def create_label(
    session: AsyncSession, clock: Clock, inbox: Inbox, body: Mapping[str, Any]
) -> InboxLabel:
    now = clock.now()
    label = InboxLabel(
        team_id=inbox.team_id, inbox_id=inbox.id, name=_name(body.get("name")),
        color=_color(body.get("color") or DEFAULT_COLOR), created_at=now, updated_at=now,
    )  # fmt: skip
    session.add(label)
    await _commit_unique(session, label.name)
    return label


async def list_labels(session: AsyncSession, inbox: Inbox) -> list[InboxLabel]:
    rows = await session.scalars(
        select(InboxLabel).where(InboxLabel.inbox_id == inbox.id).order_by(InboxLabel.name)
    )
    return list(rows.all())


async def get_label(session: AsyncSession, inbox: Inbox, label_id: str) -> InboxLabel:
    return await get_within(session, InboxLabel, InboxLabel.inbox_id, inbox.id, label_id, "Label")


async def update_label(
    session: AsyncSession, clock: Clock, label: InboxLabel, changes: Mapping[str, Any]
) -> InboxLabel:
    if changes.get("name") is not None:
        label.name = _name(changes["name"])
    if changes.get("color") is not None:
        label.color = _color(changes["color"])
    label.updated_at = clock.now()
    await _commit_unique(session, label.name)
    return label


async def delete_label(session: AsyncSession, label: InboxLabel) -> None:
    await session.delete(label)
    await session.commit()


def label_view(label: InboxLabel) -> dict[str, Any]:
    return {
        "object": "inbox_label",
        "id": label.id,
        "name": label.name,
        "color": label.color,
        "created_at": isoformat_ms(label.created_at),
    }


async def labels_of(
    session: AsyncSession, thread_ids: Sequence[str]
) -> dict[str, list[InboxLabel]]:
    """Each thread's labels, by name."""
    found: dict[str, list[InboxLabel]] = {thread_id: [] for thread_id in thread_ids}
    rows = await session.execute(
        select(InboxThreadLabel.thread_id, InboxLabel)
        .join(InboxLabel, InboxLabel.id == InboxThreadLabel.label_id)
        .where(InboxThreadLabel.thread_id.in_(list(thread_ids)))
        .order_by(InboxLabel.name)
    )
    for thread_id, label in rows.tuples():
        found[thread_id].append(label)
    return found


async def _chosen(session: AsyncSession, inbox: Inbox, ids: Any) -> list[InboxLabel]:
    if (
        not isinstance(ids, list)
        or not 1 <= len(ids) <= MAX_LABELS_AT_ONCE
        or not all(isinstance(each, str) for each in ids)
    ):
        raise ValidationError(f"`labels` must be 1 to {MAX_LABELS_AT_ONCE} label ids.")
    return [await get_label(session, inbox, each) for each in dict.fromkeys(ids)]


async def label_thread(
    session: AsyncSession, clock: Clock, inbox: Inbox, thread: InboxThread, ids: Any,
    *, replace: bool,
) -> list[InboxLabel]:  # fmt: skip
    """Add the labels to the thread (``replace``: the thread's labels become these)."""
    chosen = [] if replace and ids == [] else await _chosen(session, inbox, ids)
    before = await Snapshot.of(session, thread)
    if replace:
        await session.execute(
            delete(InboxThreadLabel).where(InboxThreadLabel.thread_id == thread.id)
        )
        have: set[str] = set()
    else:
        have = {label.id for label in (await labels_of(session, [thread.id]))[thread.id]}
    now = clock.now()
    for label in chosen:
        if label.id not in have:
            session.add(InboxThreadLabel(thread_id=thread.id, label_id=label.id, created_at=now))
    thread.updated_at = now
    await thread_updated(session, clock, thread, before)
    await session.commit()
    return (await labels_of(session, [thread.id]))[thread.id]


async def unlabel_thread(
    session: AsyncSession, clock: Clock, inbox: Inbox, thread: InboxThread, label_id: str
) -> list[InboxLabel]:
    label = await get_label(session, inbox, label_id)
    before = await Snapshot.of(session, thread)
    await session.execute(
        delete(InboxThreadLabel).where(
            InboxThreadLabel.thread_id == thread.id, InboxThreadLabel.label_id == label.id
        )
    )
    thread.updated_at = clock.now()
    await thread_updated(session, clock, thread, before)
    await session.commit()
    return (await labels_of(session, [thread.id]))[thread.id]
