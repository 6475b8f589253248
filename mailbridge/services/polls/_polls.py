"""Poll records: create, read with their counts, list, change, close, delete.

A poll is open until it is closed (``PATCH {"closed": true}`` sets ``closed_at``) or its
``closes_at`` passes; ``PATCH {"closed": false}`` reopens one closed by hand. Its question
and options are what recipients voted on, so they cannot change once any vote exists;
``closes_at`` and ``allow_change`` may change at any time. Deleting a poll deletes its
votes (database cascade), and its vote links then lead to the "not found" page.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.services.polls._requests import NewPoll, PollFields
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned
from mailbridge.storage.tables import Poll, PollVote


def is_closed(poll: Poll, now: datetime) -> bool:
    return poll.closed_at is not None or (poll.closes_at is not None and poll.closes_at <= now)


def poll_view(poll: Poll, counts: Sequence[int], now: datetime) -> dict[str, Any]:
    return {
        "object": "poll",
        "id": poll.id,
        "question": poll.question,
        "options": list(poll.options),
        "allow_change": poll.allow_change,
        "closes_at": isoformat_ms(poll.closes_at),
        "closed": is_closed(poll, now),
        "closed_at": isoformat_ms(poll.closed_at),
        "results": [
            {"option": index, "label": label, "votes": counts[index]}
            for index, label in enumerate(poll.options)
        ],
        "total_votes": sum(counts),
        "created_at": isoformat_ms(poll.created_at),
        "updated_at": isoformat_ms(poll.updated_at),
    }


async def vote_counts(session: AsyncSession, polls: Sequence[Poll]) -> dict[str, list[int]]:
    """Each poll's votes per option (one query for all of them)."""
    counts = {poll.id: [0] * len(poll.options) for poll in polls}
    if not counts:
        return counts
    rows = await session.execute(
        select(PollVote.poll_id, PollVote.option, func.count())
        .where(PollVote.poll_id.in_(list(counts)))
        .group_by(PollVote.poll_id, PollVote.option)
    )
    for poll_id, option, count in rows.tuples():
        if 0 <= option < len(counts[poll_id]):
            counts[poll_id][option] = int(count)
    return counts


def _closes_at(text: str | None, now: datetime) -> datetime | None:
    """``closes_at`` (ISO 8601; without an offset, UTC), which must be in the future."""
    if text is None:
        return None
    try:
        instant = datetime.fromisoformat(text.strip())
        instant = instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset past year 1 or 9999
        raise ValidationError("`closes_at` must be an ISO 8601 date and time.") from None
    if instant <= now:
        raise ValidationError("`closes_at` must be in the future.")
    return instant


async def create_poll(session: AsyncSession, clock: Clock, team_id: str, fields: NewPoll) -> Poll:
    now = clock.now()
    poll = Poll(
        team_id=team_id, question=fields.question, options=list(fields.options),
        allow_change=fields.allow_change, closes_at=_closes_at(fields.closes_at, now),
        closed_at=None, created_at=now, updated_at=now,
    )  # fmt: skip
    session.add(poll)
    await session.commit()
    return poll


async def get_poll(session: AsyncSession, team_id: str, poll_id: str) -> Poll:
    return await get_owned(session, Poll, team_id, poll_id, "Poll")


async def poll_with_counts(
    session: AsyncSession, clock: Clock, team_id: str, poll_id: str
) -> dict[str, Any]:
    poll = await get_poll(session, team_id, poll_id)
    counts = await vote_counts(session, [poll])
    return poll_view(poll, counts[poll.id], clock.now())


async def list_polls(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Poll]:
    return await paginate(session, select(Poll).where(Poll.team_id == team_id), Poll, page)


async def _has_votes(session: AsyncSession, poll_id: str) -> bool:
    return bool(await session.scalar(select(exists().where(PollVote.poll_id == poll_id))))


async def update_poll(
    session: AsyncSession, clock: Clock, team_id: str, poll_id: str, fields: PollFields
) -> Poll:
    poll = await get_poll(session, team_id, poll_id)
    now = clock.now()
    given = fields.model_fields_set
    for name in ("question", "options", "allow_change"):
        if name in given and getattr(fields, name) is None:
            raise ValidationError(f"`{name}` cannot be null.")
    wording_changes = (fields.question is not None and fields.question != poll.question) or (
        fields.options is not None and fields.options != list(poll.options)
    )
    if wording_changes and await _has_votes(session, poll.id):
        raise ValidationError("The question and options of a poll cannot change once it has votes.")
    if fields.question is not None:
        poll.question = fields.question
    if fields.options is not None:
        poll.options = list(fields.options)
    if fields.allow_change is not None:
        poll.allow_change = fields.allow_change
    if "closes_at" in given:
        poll.closes_at = _closes_at(fields.closes_at, now)
    if fields.closed is True and poll.closed_at is None:
        poll.closed_at = now
    elif fields.closed is False:
        poll.closed_at = None
        if poll.closes_at is not None and poll.closes_at <= now:
            raise ValidationError("`closes_at` has passed: give a later one to reopen the poll.")
    poll.updated_at = now
    await session.commit()
    return poll


async def delete_poll(session: AsyncSession, team_id: str, poll_id: str) -> Poll:
    """Delete a poll; its votes go with it (database cascade)."""
    poll = await get_poll(session, team_id, poll_id)
    await session.delete(poll)
    await session.commit()
    return poll
