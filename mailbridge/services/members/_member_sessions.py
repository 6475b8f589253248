"""A member's sessions: listed, revoked one by one, or all at once when the password changes.

A member sees and ends their own sessions; owners and admins those of the members they
manage (only an owner touches an owner's). A password reset (``mailbridge admin members
password``) ends every session of the member; a change the member makes ends all but the
session that made it. Each revocation is in the audit log.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound
from mailbridge.services.accounts import Role, member_session_prefix
from mailbridge.services.members._audit import record_audit
from mailbridge.services.members._members import may_touch, team_member
from mailbridge.storage.tables import Member, MemberSession


def _may_see(actor_role: Role | None, actor_member_id: str | None, member: Member) -> None:
    if actor_member_id != member.id:
        may_touch(actor_role, Role(member.role), None)


async def list_sessions(
    session: AsyncSession, clock: Clock, team_id: str, actor_role: Role | None,
    actor_member_id: str | None, member_id: str,
) -> list[MemberSession]:  # fmt: skip
    """The member's open sessions (not revoked, not expired), newest first."""
    member = await team_member(session, team_id, member_id)
    _may_see(actor_role, actor_member_id, member)
    rows = await session.scalars(
        select(MemberSession)
        .where(
            MemberSession.member_id == member.id,
            MemberSession.revoked_at.is_(None),
            MemberSession.expires_at > clock.now(),
        )
        .order_by(MemberSession.created_at.desc(), MemberSession.id)
    )
    return list(rows.all())


async def revoke_session(
    session: AsyncSession, clock: Clock, team_id: str, actor_role: Role | None,
    actor_member_id: str | None, session_id: str,
) -> MemberSession:  # fmt: skip
    row = (
        await session.execute(
            select(MemberSession, Member)
            .join(Member, Member.id == MemberSession.member_id)
            .where(Member.team_id == team_id, MemberSession.id == session_id)
        )
    ).first()
    if row is None:
        raise NotFound("Session not found.")
    member_session: MemberSession = row[0]
    member: Member = row[1]
    _may_see(actor_role, actor_member_id, member)
    if member_session.revoked_at is None:
        member_session.revoked_at = clock.now()
        await record_audit(
            session, clock, team_id, actor_member_id, "member.session_revoked", member.email,
            session_id=member_session.id,
        )  # fmt: skip
    await session.commit()
    return member_session


async def revoke_member_sessions(
    session: AsyncSession, clock: Clock, member: Member, actor_member_id: str | None,
    *, keep: str | None = None,
) -> int:  # fmt: skip
    """End every open session of ``member`` but the one whose token is ``keep``; how many.
    In the caller's transaction (with the audit event)."""
    kept = member_session_prefix(keep) if keep else None
    statement = update(MemberSession).where(
        MemberSession.member_id == member.id, MemberSession.revoked_at.is_(None)
    )
    if kept is not None:
        statement = statement.where(MemberSession.token_prefix != kept)
    result = await session.execute(statement.values(revoked_at=clock.now()))
    count = int(getattr(result, "rowcount", 0) or 0)
    await record_audit(
        session, clock, member.team_id, actor_member_id, "member.sessions_revoked",
        member.email, count=count, kept_current=kept is not None,
    )  # fmt: skip
    return count


def session_view(row: MemberSession, current: str | None = None) -> dict[str, Any]:
    """``current``: the token of the caller's own session (marked as such)."""
    prefix = member_session_prefix(current) if current else None
    return {
        "object": "session", "id": row.id, "member_id": row.member_id,
        "created_at": isoformat_ms(row.created_at), "expires_at": isoformat_ms(row.expires_at),
        "user_agent": row.user_agent, "client_address": row.client_address,
        "current": prefix is not None and prefix == row.token_prefix,
    }  # fmt: skip
