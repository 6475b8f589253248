"""Who may do what: API keys (created, renamed, re-scoped and revoked only here — spec
§5 rule 4) and members (invited, given another role, removed)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from mailbridge.dashboard._common import act, api_as, check_form, failed, member
from mailbridge.dashboard._render import page
from mailbridge.dashboard._session import SignedIn

router = APIRouter()

Csrf = Annotated[str, Form(max_length=200)]


async def _keys_page(
    request: Request, me: SignedIn, *, created: dict[str, Any] | None = None,
    flash: str | None = None, status_code: int = 200,
) -> Response:  # fmt: skip
    async with api_as(request, me) as api:
        keys = await api.get("/api-keys", limit=100)
    return page(request, "api_keys.html", me, title="API keys", active="/dashboard/api-keys",
                keys=keys.items(), created=created, flash=flash,
                status_code=status_code)  # fmt: skip


@router.get("/api-keys")
async def api_keys(request: Request, flash: str | None = None) -> Response:
    return await _keys_page(request, await member(request), flash=flash)


@router.post("/api-keys")
async def create_key(
    request: Request, csrf: Csrf = "", name: Annotated[str, Form(max_length=200)] = "",
    permission: Annotated[str, Form(max_length=40)] = "full_access",
    domain: Annotated[str, Form(max_length=253)] = "",
) -> Response:  # fmt: skip
    me = await member(request)
    if (refused := await check_form(request, me, csrf)) is not None:
        return refused
    body: dict[str, Any] = {"name": name, "permission": permission}
    if domain.strip():
        body["domain"] = domain.strip()
    async with api_as(request, me) as api:
        answer = await api.call("POST", "/api-keys", json=body)
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/api-keys")
    # The token is on this page only: never in a URL, never stored.
    created = {"name": name, "token": answer.body.get("token"), "id": answer.body.get("id")}
    return await _keys_page(request, me, created=created, status_code=201)


@router.post("/api-keys/{key_id}")
async def update_key(
    request: Request, key_id: str, csrf: Csrf = "",
    name: Annotated[str, Form(max_length=200)] = "",
    permission: Annotated[str, Form(max_length=40)] = "",
    domain: Annotated[str | None, Form(max_length=253)] = None,
) -> Response:  # fmt: skip
    body: dict[str, Any] = {
        k: v for k, v in {"name": name.strip(), "permission": permission}.items() if v
    }
    if domain is not None:  # the field was on the form: empty means any domain
        body["domain"] = domain.strip() or None
    return await act(
        request,
        csrf,
        "PATCH",
        f"/api-keys/{key_id}",
        body=body,
        back="/dashboard/api-keys",
        done="/dashboard/api-keys?flash=Key+updated",
    )


@router.post("/api-keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str, csrf: Csrf = "") -> Response:
    return await act(
        request,
        csrf,
        "DELETE",
        f"/api-keys/{key_id}",
        back="/dashboard/api-keys",
        done="/dashboard/api-keys?flash=Key+revoked",
    )


async def _members_page(
    request: Request, me: SignedIn, *, invited: dict[str, Any] | None = None,
    flash: str | None = None, status_code: int = 200,
) -> Response:  # fmt: skip
    async with api_as(request, me) as api:
        members = await api.get("/members", limit=100)
        invitations = await api.get("/members/invitations")
    return page(request, "members.html", me, title="Members", active="/dashboard/members",
                members=members.items(), invitations=invitations.items(), invited=invited,
                flash=flash, status_code=status_code)  # fmt: skip


@router.get("/members")
async def members(request: Request, flash: str | None = None) -> Response:
    return await _members_page(request, await member(request), flash=flash)


@router.post("/members/invitations")
async def invite(
    request: Request, csrf: Csrf = "", email: Annotated[str, Form(max_length=320)] = "",
    role: Annotated[str, Form(max_length=20)] = "view_only",
) -> Response:  # fmt: skip
    me = await member(request)
    if (refused := await check_form(request, me, csrf)) is not None:
        return refused
    async with api_as(request, me) as api:
        answer = await api.call("POST", "/members/invitations", json={"email": email, "role": role})
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/members")
    return await _members_page(request, me, invited=answer.body, status_code=201)


@router.post("/members/invitations/{invitation_id}/withdraw")
async def withdraw(request: Request, invitation_id: str, csrf: Csrf = "") -> Response:
    return await act(
        request,
        csrf,
        "DELETE",
        f"/members/invitations/{invitation_id}",
        back="/dashboard/members",
        done="/dashboard/members?flash=Invitation+withdrawn",
    )


@router.post("/members/{member_id}/role")
async def change_role(
    request: Request, member_id: str, csrf: Csrf = "",
    role: Annotated[str, Form(max_length=20)] = "",
) -> Response:  # fmt: skip
    return await act(
        request,
        csrf,
        "PATCH",
        f"/members/{member_id}",
        body={"role": role},
        back="/dashboard/members",
        done="/dashboard/members?flash=Role+changed",
    )


@router.post("/members/{member_id}/remove")
async def remove(request: Request, member_id: str, csrf: Csrf = "") -> Response:
    return await act(
        request,
        csrf,
        "DELETE",
        f"/members/{member_id}",
        back="/dashboard/members",
        done="/dashboard/members?flash=Member+removed",
    )
