"""Polls (``/polls``), and the public vote links of the mail that embeds them.

``GET /polls/vote/<token>`` needs no key (the middleware lets ``/polls/vote/`` through):
the signature of the token is the only authority. It records the vote and answers a
small page; a token we did not sign, or one whose poll is gone, is a 404 page with
nothing counted. ``HEAD`` checks the signature and records nothing, so link checkers
and prefetchers that only look never vote.
"""

from __future__ import annotations

import html
import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse
from sqlalchemy.exc import SQLAlchemyError

from mailbridge.api.bodies import parse_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.api.openapi import json_body
from mailbridge.services import polls
from mailbridge.services.kernel import instance_secret

logger = logging.getLogger(__name__)

router = APIRouter(tags=["polls"])

NO_CACHE = {"Cache-Control": "no-store, no-cache, must-revalidate, private", "Pragma": "no-cache"}
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title></head>
<body style="font-family:sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">
<h1>{title}</h1>
{body}
</body></html>
"""


def _page(title: str, *lines: str, status_code: int = 200) -> HTMLResponse:
    body = "\n".join(f"<p>{html.escape(line)}</p>" for line in lines if line)
    return HTMLResponse(
        PAGE.format(title=html.escape(title), body=body), status_code=status_code, headers=NO_CACHE
    )


def _answer(result: polls.VoteResult) -> HTMLResponse:
    if result.outcome == "recorded":
        return _page("Thank you for voting", result.question, f"Your vote: {result.label}")
    if result.outcome == "changed":
        return _page("Your vote was changed", result.question, f"Your vote now: {result.label}")
    if result.outcome == "kept":
        return _page("Your vote was already counted", result.question, f"Your vote: {result.label}")
    if result.outcome == "closed":
        return _page("This poll is closed", result.question, "Votes are no longer counted.")
    return _page("Poll not found", "This voting link is not valid.", status_code=404)


# Before /polls/{poll_id}/...: "/polls/vote/votes" is a vote link, not a poll's votes.
@router.get("/polls/vote/{token:path}", include_in_schema=False)
async def vote(token: str, session: SessionDep, context: ContextDep) -> HTMLResponse:
    try:
        secret = await instance_secret(context.database, context.settings)
        result = await polls.cast_vote(session, context.clock, secret, token)
    except SQLAlchemyError:
        logger.exception("could not record a vote")
        return _page(
            "Please try again", "Your vote could not be recorded just now.", status_code=503
        )
    if result.outcome in ("recorded", "changed"):
        context.work_added("activity")
    return _answer(result)


@router.head("/polls/vote/{token:path}", include_in_schema=False)
async def look_at_vote_link(token: str, context: ContextDep) -> Response:
    secret = await instance_secret(context.database, context.settings)
    found = polls.read_vote_token(secret, token) is not None
    return Response(status_code=200 if found else 404, media_type="text/html", headers=NO_CACHE)


@router.post("/polls", status_code=201, openapi_extra=json_body(polls.NewPoll))
async def create_poll(
    principal: Writer, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, polls.NewPoll)
    poll = await polls.create_poll(session, context.clock, principal.team_id, body)
    return {"object": "poll", "id": poll.id}


@router.get("/polls")
async def list_polls(
    principal: Reader, session: SessionDep, page: PageDep, context: ContextDep
) -> dict[str, Any]:
    result = await polls.list_polls(session, principal.team_id, page)
    counts = await polls.vote_counts(session, result.items)
    now = context.clock.now()
    return {
        "object": "list",
        "has_more": result.has_more,
        "data": [polls.poll_view(poll, counts[poll.id], now) for poll in result.items],
    }


@router.get("/polls/{poll_id}")
async def get_poll(
    poll_id: str, principal: Reader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    return await polls.poll_with_counts(session, context.clock, principal.team_id, poll_id)


@router.get("/polls/{poll_id}/votes")
async def list_votes(
    poll_id: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    poll, result = await polls.list_votes(session, principal.team_id, poll_id, page)
    return {
        "object": "list",
        "has_more": result.has_more,
        "data": [polls.vote_view(poll, vote) for vote in result.items],
    }


@router.patch("/polls/{poll_id}", openapi_extra=json_body(polls.PollFields))
async def update_poll(
    poll_id: str, principal: Writer, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    body = await parse_body(request, polls.PollFields)
    poll = await polls.update_poll(session, context.clock, principal.team_id, poll_id, body)
    return {"object": "poll", "id": poll.id}


@router.delete("/polls/{poll_id}")
async def delete_poll(poll_id: str, principal: Writer, session: SessionDep) -> dict[str, Any]:
    poll = await polls.delete_poll(session, principal.team_id, poll_id)
    return {"object": "poll", "id": poll.id, "deleted": True}
