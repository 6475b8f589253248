"""Polls: the list, and one poll's results as a bar chart with its votes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from mailbridge.dashboard._charts import bar_chart
from mailbridge.dashboard._common import (
    act,
    api_as,
    badge,
    failed,
    link,
    listing,
    member,
)
from mailbridge.dashboard._render import page

router = APIRouter()


@router.get("/polls")
async def poll_list(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/polls",
        lambda p: [link(p.get("question"), f"/dashboard/polls/{p['id']}"),
                   badge("closed" if p.get("closed") else "open"), p.get("created_at")],
        after=after, title="Polls", active="/dashboard/polls",
        intro="Embed a poll in a template or campaign as {{{poll:ID}}}.",
        columns=["Question", "State", "Created"], empty="No poll yet.",
    )  # fmt: skip


@router.get("/polls/{poll_id}")
async def poll(request: Request, poll_id: str, flash: str | None = None) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/polls/{poll_id}")
        votes = await api.get(f"/polls/{poll_id}/votes", limit=50) if answer.ok else None
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/polls")
    counts = answer.body.get("results") or []
    bars = [(str(c.get("label")), int(c.get("votes", 0))) for c in counts]
    return page(request, "poll.html", me, title=answer.body.get("question"),
                active="/dashboard/polls", poll=answer.body, chart=bar_chart(bars),
                votes=votes.items() if votes else [], flash=flash)  # fmt: skip


@router.post("/polls/{poll_id}/close")
async def close(
    request: Request, poll_id: str, csrf: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    return await act(
        request,
        csrf,
        "PATCH",
        f"/polls/{poll_id}",
        body={"closed": True},
        back=f"/dashboard/polls/{poll_id}",
        done=f"/dashboard/polls/{poll_id}?flash=Poll+closed",
    )
