"""Votes: what a click on a vote link records, and reading them back.

One vote a voter and poll, whatever the number of clicks and however concurrent: the
first click inserts (``INSERT ... ON CONFLICT (poll_id, voter) DO NOTHING``, on SQLite
and PostgreSQL alike), so exactly one of any number of racing clicks inserts. A later
click changes the option only when the poll has ``allow_change`` (an ``UPDATE`` that
matches only a different option, so a repeated click changes nothing); otherwise the
first vote stands. A closed poll records nothing.

Each vote recorded or changed is a ``poll.voted`` activity event in the same
transaction: ``{poll_id, option, label, contact_id, email}``. The dispatcher hands it
to the webhooks subscribed to it and to the automations that start on it or wait for
it (about the contact, or the address when the mail went to no contact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound
from mailbridge.services import audiences
from mailbridge.services.kernel import record_event
from mailbridge.services.polls._links import Ballot, read_vote_token
from mailbridge.services.polls._polls import get_poll, is_closed
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_postgres
from mailbridge.storage.tables import Poll, PollVote
from mailbridge.storage.types import new_id

VOTED = "poll.voted"

Outcome = Literal["recorded", "changed", "kept", "closed", "unknown"]


@dataclass(frozen=True)
class VoteResult:
    """What a click did. ``label`` is the option that counts now (the one kept, when the
    click did not change the vote)."""

    outcome: Outcome
    question: str = ""
    label: str = ""


UNKNOWN = VoteResult("unknown")


async def _voter_email(session: AsyncSession, poll: Poll, ballot: Ballot) -> str | None:
    """The address the vote is recorded with: the contact's (None when it is gone)."""
    if ballot.voter.contact_id is None:
        return ballot.voter.key
    try:
        contact = await audiences.find_contact(session, poll.team_id, ballot.voter.contact_id)
    except NotFound:
        return None
    return contact.email


def _voted(
    session: AsyncSession, clock: Clock, poll: Poll, ballot: Ballot, email: str
) -> dict[str, Any]:
    data = {
        "poll_id": poll.id, "option": ballot.option, "label": poll.options[ballot.option],
        "contact_id": ballot.voter.contact_id, "email": email,
    }  # fmt: skip
    record_event(session, clock, poll.team_id, VOTED, data)
    return data


async def cast_vote(session: AsyncSession, clock: Clock, secret: bytes, token: str) -> VoteResult:
    """Record the vote ``token`` stands for, once; ``unknown`` for a token we did not sign
    or whose poll, option or contact does not exist (nothing is recorded then)."""
    ballot = read_vote_token(secret, token)
    if ballot is None:
        return UNKNOWN
    poll = await session.scalar(
        select(Poll).where(Poll.id == ballot.poll_id, Poll.team_id == ballot.team_id)
    )
    if poll is None or ballot.option >= len(poll.options):
        return UNKNOWN
    now = clock.now()
    if is_closed(poll, now):
        return VoteResult("closed", poll.question)
    email = await _voter_email(session, poll, ballot)
    if email is None:
        return UNKNOWN
    label = poll.options[ballot.option]
    voter = ballot.voter.key
    mine = (PollVote.poll_id == poll.id, PollVote.voter == voter)
    insert = pg_insert if is_postgres(session) else sqlite_insert
    row = {
        "id": new_id(), "poll_id": poll.id, "team_id": poll.team_id, "voter": voter,
        "contact_id": ballot.voter.contact_id, "email": email, "option": ballot.option,
        "created_at": now, "updated_at": now,
    }  # fmt: skip
    try:
        inserted = await session.scalar(
            insert(PollVote)
            .values(row)
            .on_conflict_do_nothing(index_elements=["poll_id", "voter"])
            .returning(PollVote.id)
        )
    except IntegrityError:  # the poll was deleted since it was read
        await session.rollback()
        return UNKNOWN
    if inserted is not None:
        _voted(session, clock, poll, ballot, email)
        await session.commit()
        return VoteResult("recorded", poll.question, label)
    if poll.allow_change:
        changed = await session.scalar(
            update(PollVote)
            .where(*mine, PollVote.option != ballot.option)
            .values(option=ballot.option, email=email, updated_at=now)
            .returning(PollVote.id)
            .execution_options(synchronize_session=False)
        )
        if changed is not None:
            _voted(session, clock, poll, ballot, email)
            await session.commit()
            return VoteResult("changed", poll.question, label)
    counted = await session.scalar(select(PollVote.option).where(*mine))
    await session.commit()
    kept = poll.options[counted] if counted is not None and counted < len(poll.options) else label
    return VoteResult("kept", poll.question, kept)


# -- reading ------------------------------------------------------------------------------


def vote_view(poll: Poll, vote: PollVote) -> dict[str, Any]:
    label = poll.options[vote.option] if 0 <= vote.option < len(poll.options) else None
    return {
        "object": "poll_vote",
        "id": vote.id,
        "poll_id": vote.poll_id,
        "contact_id": vote.contact_id,
        "email": vote.email,
        "option": vote.option,
        "label": label,
        "voted_at": isoformat_ms(vote.updated_at),
        "created_at": isoformat_ms(vote.created_at),
    }


async def list_votes(
    session: AsyncSession, team_id: str, poll_id: str, page: PageRequest
) -> tuple[Poll, Page[PollVote]]:
    """A poll's votes, newest first (404 for another team's poll)."""
    poll = await get_poll(session, team_id, poll_id)
    query = select(PollVote).where(PollVote.poll_id == poll.id)
    return poll, await paginate(session, query, PollVote, page)
