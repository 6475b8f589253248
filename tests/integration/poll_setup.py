"""Helpers of the poll tests: polls made over HTTP, vote links signed as mail signs them,
and what a click left behind."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy import func, select

from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.services.polls import Voter
from mailbridge.services.polls._links import vote_url
from mailbridge.storage.tables import ActivityEvent, PollVote

VOTE_LINK = re.compile(r"https?://[^\s\"'<>]+/polls/vote/[A-Za-z0-9_\-.]+")


async def create_poll(client: httpx.AsyncClient, headers: dict[str, str], **fields: Any) -> str:
    body: dict[str, Any] = {"question": "Which day suits you?", "options": ["Monday", "Friday"]}
    body.update(fields)
    response = await client.post("/polls", json=body, headers=headers)
    assert response.status_code == 201, response.text
    assert set(response.json()) == {"object", "id"} and response.json()["object"] == "poll"
    return str(response.json()["id"])


async def get_poll(
    client: httpx.AsyncClient, headers: dict[str, str], poll_id: str
) -> dict[str, Any]:
    response = await client.get(f"/polls/{poll_id}", headers=headers)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def counts(poll: dict[str, Any]) -> list[int]:
    return [result["votes"] for result in poll["results"]]


async def signed_link(
    context: ServiceContext,
    team_id: str,
    poll_id: str,
    option: int,
    *,
    contact_id: str | None = None,
    email: str = "ann@corp.io",
) -> str:
    """The link a mail to this voter carries for ``option`` (as ``{{{poll:ID}}}`` signs it)."""
    secret = await instance_secret(context.database, context.settings)
    voter = Voter.of(contact_id, email)
    return vote_url(context.settings.public_url, secret, poll_id, team_id, option, voter)


def path_of(url: str) -> str:
    """A link of a mail, as the ASGI test client reaches it."""
    return urlsplit(url).path


async def click(client: httpx.AsyncClient, url: str) -> httpx.Response:
    """A recipient's click: no key, no User-Agent of ours needed."""
    return await client.get(path_of(url), headers={"User-Agent": "Mozilla/5.0"})


async def vote_rows(context: ServiceContext, poll_id: str) -> list[PollVote]:
    async with context.database.session() as session:
        rows = await session.scalars(select(PollVote).where(PollVote.poll_id == poll_id))
        return list(rows.all())


async def voted_events(context: ServiceContext, team_id: str) -> list[dict[str, Any]]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(ActivityEvent.data)
            .where(ActivityEvent.team_id == team_id, ActivityEvent.type == "poll.voted")
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return [dict(data) for data in rows]


async def vote_count(context: ServiceContext) -> int:
    async with context.database.session() as session:
        return int(await session.scalar(select(func.count()).select_from(PollVote)) or 0)
