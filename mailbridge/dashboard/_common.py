"""What the page handlers share: the signed-in member or a redirect, the API as that
member, a table cell, a list page and the link to its next page, and the check every
form post makes (CSRF first, then the API decides what the member may do)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from starlette.responses import RedirectResponse, Response

from mailbridge.dashboard._api import Answer, Api
from mailbridge.dashboard._render import message, page
from mailbridge.dashboard._session import CSRF_HEADER, SignedIn, csrf_matches, signed_in
from mailbridge.dashboard._signing_in import sign_in_redirect


class Redirect(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


async def member(request: Request) -> SignedIn:
    """The signed-in member; raises :class:`Redirect` to the sign-in page otherwise."""
    me = await signed_in(request)
    if me is None:
        raise Redirect(sign_in_redirect(request))
    return me


@asynccontextmanager
async def api_as(request: Request, me: SignedIn) -> AsyncIterator[Api]:
    api = Api(request, me.token)
    try:
        yield api
    finally:
        await api.close()


def link(text: Any, href: str) -> dict[str, Any]:
    return {"text": "—" if text in (None, "") else str(text), "href": href}


def badge(text: Any) -> dict[str, Any]:
    value = str(text or "—")
    return {"text": value, "badge": value.replace(" ", "_")}


def code(text: Any, *, wrap: bool = False) -> dict[str, Any]:
    """Monospace; ``wrap``: long values (a DKIM key) break anywhere."""
    return {"text": str(text), "code": True, "wrap": wrap}


def next_href(request: Request, answer: Answer) -> str | None:
    """The link to the next (older) page when the list has more."""
    rows = answer.items()
    if not (isinstance(answer.body, dict) and answer.body.get("has_more") and rows):
        return None
    query = dict(request.query_params)
    query["after"] = str(rows[-1].get("id"))
    return f"{request.url.path}?{urlencode(query)}"


async def listing(
    request: Request,
    path: str,
    row: Callable[[dict[str, Any]], list[Any]],
    *,
    after: str | None,
    title: str,
    active: str,
    columns: list[str],
    empty: str,
    **values: Any,
) -> Response:
    """A list page: one page of the API's ``path`` as the signed-in member, a table row
    per item, and the link to the next page."""
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(path, after=after)
    return page(
        request, "listing.html", me, title=title, active=active, columns=columns,
        rows=[row(item) for item in answer.items()], empty=empty,
        next_href=next_href(request, answer), **values,
    )  # fmt: skip


def failed(request: Request, me: SignedIn, answer: Answer, back: str) -> Response:
    """The API said no: its status, its error name and message, on a page."""
    return message(
        request, me, "Not done", answer.message or "The request failed.",
        status_code=answer.status if answer.status >= 400 else 500, name=answer.error_name,
        back=back,
    )  # fmt: skip


async def check_form(request: Request, me: SignedIn, given: str | None) -> Response | None:
    """None when the post carries this member's CSRF token (field or htmx header); else
    the refusal."""
    if csrf_matches(me.csrf, given) or csrf_matches(me.csrf, request.headers.get(CSRF_HEADER)):
        return None
    return message(
        request, me, "Refused",
        "The form was not this site's (no valid CSRF token); nothing was changed.",
        status_code=403, name="invalid_csrf_token",
    )  # fmt: skip


async def act(
    request: Request,
    csrf: str,
    method: str,
    path: str,
    *,
    body: Any = None,
    back: str,
    done: str,
) -> Response:
    """A form's one API call: the member, their CSRF token, the call, and then either
    the API's refusal on a page or a redirect to ``done`` (a 303, so a reload does not
    post again)."""
    me = await member(request)
    if (refused := await check_form(request, me, csrf)) is not None:
        return refused
    async with api_as(request, me) as api:
        answer = await api.call(method, path, json=body)
    if not answer.ok:
        return failed(request, me, answer, back)
    return RedirectResponse(done, status_code=303)
