"""A member's own account (password, sessions), a managed member's sessions, and the
audit log of member changes (owners) — each over the members API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from mailbridge.dashboard._common import act, api_as, check_form, failed, member
from mailbridge.dashboard._render import page

router = APIRouter()

Csrf = Annotated[str, Form(max_length=200)]
Password = Annotated[str, Form(max_length=4096)]


@router.get("/account")
async def account(request: Request, flash: str | None = None) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        sessions = await api.get(f"/members/{me.principal.member_id}/sessions")
    return page(request, "sessions.html", me, title="Your account", active="/dashboard/account",
                own=True, whose=me.email, sessions=sessions.items(), flash=flash)  # fmt: skip


@router.post("/account/password")
async def change_password(
    request: Request, csrf: Csrf = "", current_password: Password = "", password: Password = ""
) -> Response:
    me = await member(request)
    if (refused := await check_form(request, me, csrf)) is not None:
        return refused
    body = {"current_password": current_password, "password": password}
    async with api_as(request, me) as api:
        answer = await api.call("POST", "/members/me/password", json=body)
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/account")
    ended = answer.body.get("sessions_revoked", 0)
    done = f"/dashboard/account?flash=Password+changed;+{ended}+other+sessions+ended"
    return RedirectResponse(done, status_code=303)


@router.get("/members/audit")
async def audit(request: Request) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.call("GET", "/members/audit", params={"limit": 100})
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/members")
    return page(request, "audit.html", me, title="Audit log", active="/dashboard/members",
                events=answer.items())  # fmt: skip


@router.get("/members/{member_id}/sessions")
async def member_sessions(request: Request, member_id: str) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.call("GET", f"/members/{member_id}/sessions")
        members = await api.get("/members", limit=100)
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/members")
    whose = next((m["email"] for m in members.items() if m.get("id") == member_id), member_id)
    return page(request, "sessions.html", me, title="Sessions", active="/dashboard/members",
                own=member_id == me.principal.member_id, whose=whose, member_id=member_id,
                sessions=answer.items(), flash=None)  # fmt: skip


@router.post("/sessions/{session_id}/revoke")
async def revoke_session(
    request: Request, session_id: str, csrf: Csrf = "",
    back: Annotated[str, Form(max_length=200)] = "/dashboard/account",
) -> Response:  # fmt: skip
    # Back only to the pages that list sessions.
    if not (back == "/dashboard/account" or back.startswith("/dashboard/members/")):
        back = "/dashboard/account"
    return await act(request, csrf, "DELETE", f"/members/sessions/{session_id}", back=back,
                     done=back)  # fmt: skip
