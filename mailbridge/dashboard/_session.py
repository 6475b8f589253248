"""Who is signed in, and is this form theirs?

A dashboard session is an HttpOnly cookie (SameSite=Lax; Secure when the request came
over TLS) holding the member session token (``mbs_…``) that signing in opened; the
pages call the HTTP API with it as their bearer token, so the API's own rules (roles,
view-only) hold for every click. Every form carries a CSRF token: for a signed-in
member an HMAC of the session token under the instance secret (so another site can
neither read nor make one); on the sign-in form, where there is no session yet, an HMAC
of a random per-browser cookie. Sign-in attempts are slowed down per account and
client address (``_sign_in_limits``); a browser that signed in to an account before
carries a device cookie that lets the right password through an account-wide slowdown.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ApiError
from mailbridge.services.accounts import Principal, authenticate
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.tables import Member

SESSION_COOKIE = "mb_session"
LOGIN_COOKIE = "mb_login"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
SESSION_MAX_AGE = 30 * 24 * 3600  # the member session's own lifetime
DEVICE_COOKIE = "mb_device"
DEVICE_MAX_AGE = 365 * 24 * 3600


@dataclass(frozen=True)
class SignedIn:
    """The member behind the cookie, the token the pages call the API with, and the CSRF
    token their forms carry."""

    principal: Principal
    token: str
    email: str
    csrf: str

    @property
    def may_write(self) -> bool:
        return self.principal.role is not None and self.principal.role.value != "view_only"

    @property
    def manages_members(self) -> bool:
        return self.principal.role is not None and self.principal.role.value in ("owner", "admin")


def context_of(request: Request) -> ServiceContext:
    context: ServiceContext = request.app.state.context
    return context


async def _secret(request: Request) -> bytes:
    context = context_of(request)
    return await instance_secret(context.database, context.settings)


def _mac(secret: bytes, purpose: str, value: str) -> str:
    return hmac.new(secret, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()


async def signed_in(request: Request) -> SignedIn | None:
    """The signed-in member, or None (no cookie, a revoked or expired session, a key)."""
    token = request.cookies.get(SESSION_COOKIE, "")
    if not token.startswith("mbs_"):
        return None
    context = context_of(request)
    try:
        async with context.database.session() as session:
            principal = await authenticate(session, context.clock, token)
            email = await _member_email(session, principal)
    except ApiError:
        return None
    if principal.member_id is None:
        return None
    return SignedIn(principal, token, email, _mac(await _secret(request), "csrf", token))


async def _member_email(session: AsyncSession, principal: Principal) -> str:
    return await session.scalar(select(Member.email).where(Member.id == principal.member_id)) or ""


def csrf_matches(expected: str, given: str | None) -> bool:
    """Constant time, on bytes: whatever a hostile form carries is comparable."""
    if not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "surrogatepass"))


async def with_login_csrf(request: Request, render: Callable[[str], Response]) -> Response:
    """A page with a form for somebody not signed in (sign-in, joining): ``render`` gets
    the form's CSRF token, bound to a per-browser cookie set on the response."""
    nonce = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)
    response = render(_mac(await _secret(request), "login", nonce))
    response.set_cookie(
        LOGIN_COOKIE, nonce, httponly=True, samesite="strict", path="/dashboard",
        secure=request.url.scheme == "https",
    )  # fmt: skip
    return response


async def login_csrf_matches(request: Request, given: str | None) -> bool:
    nonce = request.cookies.get(LOGIN_COOKIE)
    if not nonce:
        return False
    return csrf_matches(_mac(await _secret(request), "login", nonce), given)


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        SESSION_COOKIE, token, max_age=SESSION_MAX_AGE, httponly=True, samesite="lax",
        path="/dashboard", secure=request.url.scheme == "https",
    )  # fmt: skip


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/dashboard")


async def known_device(request: Request, account: str) -> str | None:
    """The nonce of the browser's device cookie when it was set by a sign-in to ``account``."""
    nonce, _, mac = request.cookies.get(DEVICE_COOKIE, "").partition(".")
    if not nonce or not mac:
        return None
    expected = _mac(await _secret(request), "device", f"{account.strip().lower()}:{nonce}")
    return nonce if csrf_matches(expected, mac) else None


async def set_device_cookie(request: Request, response: Response, account: str) -> None:
    """Remember this browser as one that signed in to ``account``."""
    nonce = secrets.token_urlsafe(16)
    mac = _mac(await _secret(request), "device", f"{account.strip().lower()}:{nonce}")
    response.set_cookie(
        DEVICE_COOKIE, f"{nonce}.{mac}", max_age=DEVICE_MAX_AGE, httponly=True,
        samesite="lax", path="/dashboard", secure=request.url.scheme == "https",
    )  # fmt: skip
