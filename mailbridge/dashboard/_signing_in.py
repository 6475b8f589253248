"""Signing in and out, and joining a team by invitation."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import quote, unquote, urlsplit

from fastapi import APIRouter, Form, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from mailbridge.dashboard import _session as sessions
from mailbridge.dashboard._render import message, page
from mailbridge.dashboard._sign_in_limits import SignInLimiter
from mailbridge.errors import ApiError
from mailbridge.services import accounts, members

router = APIRouter()


HOME = "/dashboard"
MAX_NEXT = 2000  # the sign-in form's own limit on ``next``
_PRINTABLE = re.compile(r"[!-~]+")  # ASCII, no space, no control character
_ENCODED = re.compile(r"%(?:2f|5c|2e|25)", re.IGNORECASE)  # / \ . and % itself


def _safe_next(target: str | None) -> str:
    """``target`` when it is a clean path of the dashboard, else the dashboard's home.

    Clean: printable ASCII without a backslash (browsers read ``\\`` as ``/`` and drop
    tabs and line breaks), no scheme or host, no encoded slash, backslash, dot or percent
    (``%2e%2e``, ``%2f``), and no ``.``, ``..`` or empty segment; the first segment is
    ``dashboard``. Nothing is repaired: a ``next`` that needs it was not ours."""
    if not target or len(target) > MAX_NEXT or not _PRINTABLE.fullmatch(target):
        return HOME
    parts = urlsplit(target)
    if "\\" in target or parts.scheme or parts.netloc or _ENCODED.search(parts.path):
        return HOME
    path = unquote(parts.path)
    segments = path.split("/")
    if not _PRINTABLE.fullmatch(path) or segments[:2] != ["", "dashboard"]:
        return HOME
    if any(segment in ("", ".", "..") for segment in segments[2:]):
        return HOME
    return target


def sign_in_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/dashboard/login?next={quote(target)}", status_code=303)


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, next: str | None = None) -> Response:
    if await sessions.signed_in(request) is not None:
        return RedirectResponse(_safe_next(next), status_code=303)
    return await _login_page(request, _safe_next(next), "", "", None, 200)


async def _login_page(
    request: Request, target: str, email: str, team: str, error: str | None, status: int
) -> Response:
    return await sessions.with_login_csrf(
        request,
        lambda csrf: page(request, "login.html", None, title="Sign in", status_code=status,
                          csrf=csrf, next=target, email=email, team=team, error=error),
    )  # fmt: skip


@router.post("/login")
async def login(
    request: Request,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=4096)] = "",
    team: Annotated[str, Form(max_length=200)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/dashboard",
) -> Response:
    target = _safe_next(next)
    if not await sessions.login_csrf_matches(request, csrf):
        return message(request, None, "Refused", "The form was not this site's (no valid CSRF "
                       "token). Reload the sign-in page and try again.", status_code=403,
                       name="invalid_csrf_token", back="/dashboard/login")  # fmt: skip
    limiter: SignInLimiter = request.app.state.sign_in_limiter
    client = request.client.host if request.client else "unknown"
    device = await sessions.known_device(request, email)
    wait = await limiter.wait(client, email, device)
    if wait > 0:
        seconds = max(1, round(wait))
        answer = await _login_page(request, target, email, team, "Too many sign-in attempts. "
                                   f"Try again in {seconds} seconds.", 429)  # fmt: skip
        answer.headers["Retry-After"] = str(seconds)
        return answer
    context = sessions.context_of(request)
    where = accounts.Device(request.headers.get("user-agent"), client)
    async with context.database.session() as session:
        found = await members.sign_in(session, context.clock, email, password, team or None, where)
    if found is None:
        limiter.failed(client, email, device)
        return await _login_page(request, target, email, team, "Wrong email or password.", 401)
    limiter.succeeded(client, email, device)
    _member, token = found
    response = RedirectResponse(target, status_code=303)
    sessions.set_session_cookie(request, response, token)
    await sessions.set_device_cookie(request, response, email)
    return response


@router.post("/logout")
async def logout(request: Request, csrf: Annotated[str, Form(max_length=200)] = "") -> Response:
    me = await sessions.signed_in(request)
    if me is None:
        return RedirectResponse("/dashboard/login", status_code=303)
    if not sessions.csrf_matches(me.csrf, csrf):
        return message(request, me, "Refused", "The form was not this site's (no valid CSRF "
                       "token).", status_code=403, name="invalid_csrf_token")  # fmt: skip
    context = sessions.context_of(request)
    async with context.database.session() as session:
        await members.sign_out(session, context.clock, me.token)
    accounts.principal_cache(context).discard(me.token)
    response = RedirectResponse("/dashboard/login", status_code=303)
    sessions.clear_session_cookie(response)
    return response


@router.get("/invitations/{token}", response_class=HTMLResponse)
async def invitation_form(request: Request, token: str) -> Response:
    context = sessions.context_of(request)
    try:
        async with context.database.session() as session:
            invitation, team = await members.open_invitation(session, context.clock, token)
    except ApiError as error:
        return message(request, None, "Invitation not found", error.message, status_code=404)
    return await sessions.with_login_csrf(
        request,
        lambda csrf: page(request, "invitation.html", None, title="Join", invitation=invitation,
                          masked_email=members.masked_address(invitation.email),
                          team_name=team.name, csrf=csrf, error=None,
                          min_length=members.MIN_PASSWORD_LENGTH),
    )  # fmt: skip


@router.post("/invitations/{token}")
async def accept_invitation(
    request: Request,
    token: str,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=4096)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    if not await sessions.login_csrf_matches(request, csrf):
        return message(request, None, "Refused", "The form was not this site's (no valid CSRF "
                       "token).", status_code=403, name="invalid_csrf_token")  # fmt: skip
    context = sessions.context_of(request)
    try:
        async with context.database.session() as session:
            where = accounts.Device(
                request.headers.get("user-agent"), request.client.host if request.client else None
            )
            _member, session_token = await members.accept_invitation(
                session, context.clock, token, email, password, where
            )
    except ApiError as error:
        return message(request, None, "Could not join", error.message,
                       status_code=error.status_code, name=error.name,
                       back=f"/dashboard/invitations/{token}")  # fmt: skip
    response = RedirectResponse("/dashboard", status_code=303)
    sessions.set_session_cookie(request, response, session_token)
    return response
