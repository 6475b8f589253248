"""A team's members as the dashboard manages them: listed, given another role, removed.

Owners and admins manage members; only an owner makes or unmakes an owner; a team always
keeps one owner (the last cannot be demoted or removed). A removed member's sessions end
at once (they go with the member; the caller forgets cached principals). Each change is
in the team's audit log (``_audit``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, RoleTooLow, ValidationError
from mailbridge.services.accounts import Role
from mailbridge.services.members._audit import record_audit
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.tables import Member


async def list_members(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Member]:
    return await paginate(session, select(Member).where(Member.team_id == team_id), Member, page)


async def team_member(session: AsyncSession, team_id: str, member_id: str) -> Member:
    found = await session.scalar(
        select(Member).where(Member.team_id == team_id, Member.id == member_id)
    )
    if found is None:
        raise NotFound("Member not found.")
    return found


async def member_by_email(session: AsyncSession, team_id: str, email: str) -> Member:
    found = await session.scalar(
        select(Member).where(Member.team_id == team_id, Member.email == email.strip().lower())
    )
    if found is None:
        raise NotFound(f"{email} is not a member of this team.")
    return found


async def _owners(session: AsyncSession, team_id: str) -> int:
    return int(
        await session.scalar(
            select(func.count()).where(Member.team_id == team_id, Member.role == Role.OWNER.value)
        )
        or 0
    )


def may_touch(actor: Role | None, before: Role, after: Role | None) -> None:
    if actor not in (Role.OWNER, Role.ADMIN):
        raise RoleTooLow("Only owners and admins manage members.")
    if Role.OWNER in (before, after) and actor is not Role.OWNER:
        raise RoleTooLow("Only an owner makes, unmakes or removes an owner.")


async def change_role(
    session: AsyncSession, clock: Clock, team_id: str, actor: Role | None,
    actor_member_id: str | None, member_id: str, role: Role,
) -> Member:  # fmt: skip
    member = await team_member(session, team_id, member_id)
    before = Role(member.role)
    may_touch(actor, before, role)
    if before is Role.OWNER and role is not Role.OWNER and await _owners(session, team_id) <= 1:
        raise ValidationError("The last owner keeps the role; make another owner first.")
    member.role = role.value
    if before is not role:
        await record_audit(session, clock, team_id, actor_member_id, "member.role_changed",
                           member.email, old=before.value, new=role.value)  # fmt: skip
    await session.commit()
    return member


async def remove_member(
    session: AsyncSession, clock: Clock, team_id: str, actor: Role | None,
    actor_member_id: str | None, member_id: str,
) -> Member:  # fmt: skip
    member = await team_member(session, team_id, member_id)
    before = Role(member.role)
    may_touch(actor, before, None)
    if before is Role.OWNER and await _owners(session, team_id) <= 1:
        raise ValidationError("The last owner cannot be removed; make another owner first.")
    await record_audit(session, clock, team_id, actor_member_id, "member.removed",
                       member.email, role=before.value)  # fmt: skip
    await session.delete(member)
    await session.commit()
    return member


def member_view(member: Member) -> dict[str, Any]:
    return {
        "object": "member", "id": member.id, "email": member.email, "role": member.role,
        "created_at": isoformat_ms(member.created_at),
    }  # fmt: skip
