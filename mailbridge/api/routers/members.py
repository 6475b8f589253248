"""A team's members (spec §5 rule 5 for who may change what): the dashboard's, so members
only — an API key hears 403 dashboard_only; a view_only member may list them. Also each
member's sessions (their own, or those of members they manage), their own password, and
the audit log of member changes (owners)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, DashboardReader, DashboardUser, PageDep, SessionDep
from mailbridge.api.openapi import json_body
from mailbridge.clock import isoformat_ms
from mailbridge.services import accounts, members
from mailbridge.services.accounts import Role, bearer_token
from mailbridge.services.members import member_view
from mailbridge.storage.tables import MemberInvitation

router = APIRouter(tags=["members"])


class ChangeMember(BaseModel):
    role: Role


class Invite(BaseModel):
    email: str = Field(min_length=3, max_length=320)
    role: Role = Role.VIEW_ONLY


class ChangePassword(BaseModel):
    current_password: str = Field(min_length=1, max_length=4096)
    password: str = Field(min_length=1, max_length=4096)


def _token(request: Request) -> str:
    """The caller's own member session token (the bearer the request carried)."""
    return bearer_token(request.headers.get("authorization"))


def invitation_view(invitation: MemberInvitation, url: str | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "object": "invitation", "id": invitation.id, "email": invitation.email,
        "role": invitation.role, "created_at": isoformat_ms(invitation.created_at),
        "expires_at": isoformat_ms(invitation.expires_at),
    }  # fmt: skip
    if url is not None:
        view["url"] = url  # shown once: the token is kept only as a hash
    return view


@router.post("/members/invitations", status_code=201, openapi_extra=json_body(Invite))
async def invite(
    principal: DashboardUser, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """Invite an address with a role (owners and admins; only an owner invites an owner);
    the answer carries the one-time link to pass on."""
    body = await parse_body(request, Invite)
    invitation, token = await members.invite_member(
        session, context.clock, principal.team_id, principal.role, principal.member_id,
        body.email, body.role,
    )  # fmt: skip
    base = context.settings.public_url.rstrip("/")
    return invitation_view(invitation, f"{base}/dashboard/invitations/{token}")


@router.get("/members/invitations")
async def list_invitations(
    principal: DashboardReader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    pending = await members.pending_invitations(session, context.clock, principal.team_id)
    return {"object": "list", "has_more": False, "data": [invitation_view(i) for i in pending]}


@router.delete("/members/invitations/{invitation_id}")
async def withdraw_invitation(
    principal: DashboardUser, invitation_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    await members.withdraw_invitation(
        session, context.clock, principal.team_id, principal.role, principal.member_id,
        invitation_id,
    )  # fmt: skip
    return {"object": "invitation", "id": invitation_id, "deleted": True}


@router.get("/members")
async def list_members(
    principal: DashboardReader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    return list_body(await members.list_members(session, principal.team_id, page), member_view)


@router.patch("/members/{member_id}", openapi_extra=json_body(ChangeMember))
async def change_member(
    principal: DashboardUser, member_id: str, request: Request, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    body = await parse_body(request, ChangeMember)
    member = await members.change_role(
        session, context.clock, principal.team_id, principal.role, principal.member_id,
        member_id, body.role,
    )  # fmt: skip
    accounts.principal_cache(context).clear()  # the new role holds from the next request on
    return member_view(member)


@router.delete("/members/{member_id}")
async def remove_member(
    principal: DashboardUser, member_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    member = await members.remove_member(
        session, context.clock, principal.team_id, principal.role, principal.member_id, member_id
    )
    accounts.principal_cache(context).clear()  # their sessions end now
    return {"object": "member", "id": member.id, "deleted": True}


@router.get("/members/audit")
async def audit_log(
    principal: DashboardReader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    """Who changed members, roles, invitations and sessions, and when (owners only)."""
    found = await members.list_audit(session, principal.team_id, principal.role, page)
    return list_body(found, members.audit_view)


@router.get("/members/{member_id}/sessions")
async def member_sessions(
    principal: DashboardReader, member_id: str, request: Request, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    """A member's open sessions: one's own, or a managed member's (owners and admins)."""
    rows = await members.list_sessions(
        session, context.clock, principal.team_id, principal.role, principal.member_id, member_id
    )
    current = _token(request)
    return {"object": "list", "has_more": False,
            "data": [members.session_view(row, current) for row in rows]}  # fmt: skip


@router.delete("/members/sessions/{session_id}")
async def revoke_session(
    principal: DashboardReader, session_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """End a session: one's own (any role, view-only too), or a managed member's."""
    await members.revoke_session(
        session, context.clock, principal.team_id, principal.role, principal.member_id,
        session_id,
    )  # fmt: skip
    accounts.principal_cache(context).clear()  # it ends now, in this process's cache too
    return {"object": "session", "id": session_id, "deleted": True}


@router.post("/members/me/password", openapi_extra=json_body(ChangePassword))
async def change_password(
    principal: DashboardReader, request: Request, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """Change one's own password: every other session of the member ends."""
    body = await parse_body(request, ChangePassword)
    assert principal.member_id is not None  # a member: DashboardReader refuses keys
    ended = await members.change_password(
        session, context.clock, principal.member_id, body.current_password, body.password,
        _token(request),
    )  # fmt: skip
    accounts.principal_cache(context).clear()
    return {"object": "member", "id": principal.member_id, "password": "changed",
            "sessions_revoked": ended}  # fmt: skip
