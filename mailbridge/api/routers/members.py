"""A team's members (spec §5 rule 5 for who may change what): the dashboard's, so members
only — an API key hears 403 dashboard_only; a view_only member may list them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, parse_body
from mailbridge.api.deps import ContextDep, DashboardReader, DashboardUser, PageDep, SessionDep
from mailbridge.api.openapi import json_body
from mailbridge.clock import isoformat_ms
from mailbridge.services import accounts
from mailbridge.services.accounts import Role, member_view
from mailbridge.storage.tables import MemberInvitation

router = APIRouter(tags=["members"])


class ChangeMember(BaseModel):
    role: Role


class Invite(BaseModel):
    email: str = Field(min_length=3, max_length=320)
    role: Role = Role.VIEW_ONLY


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
    invitation, token = await accounts.invite_member(
        session, context.clock, principal.team_id, principal.role, principal.member_id,
        body.email, body.role,
    )  # fmt: skip
    base = context.settings.public_url.rstrip("/")
    return invitation_view(invitation, f"{base}/dashboard/invitations/{token}")


@router.get("/members/invitations")
async def list_invitations(
    principal: DashboardReader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    pending = await accounts.pending_invitations(session, context.clock, principal.team_id)
    return {"object": "list", "has_more": False, "data": [invitation_view(i) for i in pending]}


@router.delete("/members/invitations/{invitation_id}")
async def withdraw_invitation(
    principal: DashboardUser, invitation_id: str, session: SessionDep
) -> dict[str, Any]:
    await accounts.withdraw_invitation(session, principal.team_id, principal.role, invitation_id)
    return {"object": "invitation", "id": invitation_id, "deleted": True}


@router.get("/members")
async def list_members(
    principal: DashboardReader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    return list_body(await accounts.list_members(session, principal.team_id, page), member_view)


@router.patch("/members/{member_id}", openapi_extra=json_body(ChangeMember))
async def change_member(
    principal: DashboardUser, member_id: str, request: Request, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    body = await parse_body(request, ChangeMember)
    member = await accounts.change_role(
        session, principal.team_id, principal.role, member_id, body.role
    )
    context.principals.clear()  # the new role holds from the next request on
    return member_view(member)


@router.delete("/members/{member_id}")
async def remove_member(
    principal: DashboardUser, member_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    member = await accounts.remove_member(session, principal.team_id, principal.role, member_id)
    context.principals.clear()  # their sessions end now
    return {"object": "member", "id": member.id, "deleted": True}
