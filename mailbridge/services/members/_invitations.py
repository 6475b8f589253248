"""Invitations: an owner or admin invites an address with a role; the link works once.

The link carries a random token (kept only as its SHA-256). Whoever opens it before it
expires, and names the address it was sent to, chooses a password and becomes the
member with that address, signed in: a link that leaked on its own (a forwarded chat,
a screenshot) is not enough. The role rules are those of changing a role: nobody
invites above their own role, only an owner invites an owner. Invitations, withdrawals
and acceptances are in the team's audit log.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.accounts import Device, Role, open_member_session
from mailbridge.services.members._audit import record_audit
from mailbridge.services.members._members import may_touch
from mailbridge.services.members._sign_in import hash_password
from mailbridge.storage.tables import Member, MemberInvitation, Team

INVITATION_LIFETIME = timedelta(days=7)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def invite_member(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    actor: Role | None,
    invited_by: str | None,
    email: str,
    role: Role,
) -> tuple[MemberInvitation, str]:
    """A new invitation and its token (shown once, inside the link)."""
    may_touch(actor, role, role)
    address = email.strip().lower()
    if "@" not in address or len(address) > 320:
        raise ValidationError("Invite an email address.")
    existing = await session.scalar(
        select(Member.id).where(Member.team_id == team_id, Member.email == address)
    )
    if existing is not None:
        raise ValidationError(f"{address} is a member already.")
    token = secrets.token_urlsafe(32)
    now = clock.now()
    invitation = MemberInvitation(
        team_id=team_id, email=address, role=role.value, token_hash=_digest(token),
        invited_by=invited_by, created_at=now, expires_at=now + INVITATION_LIFETIME,
    )  # fmt: skip
    session.add(invitation)
    await record_audit(session, clock, team_id, invited_by, "member.invited", address,
                       role=role.value)  # fmt: skip
    await session.commit()
    return invitation, token


async def pending_invitations(
    session: AsyncSession, clock: Clock, team_id: str
) -> list[MemberInvitation]:
    rows = await session.scalars(
        select(MemberInvitation)
        .where(
            MemberInvitation.team_id == team_id,
            MemberInvitation.accepted_at.is_(None),
            MemberInvitation.expires_at > clock.now(),
        )
        .order_by(MemberInvitation.created_at.desc())
    )
    return list(rows.all())


async def withdraw_invitation(
    session: AsyncSession, clock: Clock, team_id: str, actor: Role | None,
    actor_member_id: str | None, invitation_id: str,
) -> None:  # fmt: skip
    invitation = await session.scalar(
        select(MemberInvitation).where(
            MemberInvitation.team_id == team_id, MemberInvitation.id == invitation_id
        )
    )
    if invitation is None:
        raise NotFound("Invitation not found.")
    may_touch(actor, Role(invitation.role), None)
    await record_audit(session, clock, team_id, actor_member_id, "invitation.withdrawn",
                       invitation.email, role=invitation.role)  # fmt: skip
    await session.delete(invitation)
    await session.commit()


async def open_invitation(
    session: AsyncSession, clock: Clock, token: str
) -> tuple[MemberInvitation, Team]:
    """The invitation behind ``token`` and its team, while it can still be accepted."""
    row = (
        await session.execute(
            select(MemberInvitation, Team)
            .join(Team, Team.id == MemberInvitation.team_id)
            .where(MemberInvitation.token_hash == _digest(token))
        )
    ).first()
    if row is None:
        raise NotFound("This invitation does not exist.")
    invitation, team = row
    if invitation.accepted_at is not None or invitation.expires_at <= clock.now():
        raise NotFound("This invitation was used or has expired.")
    return invitation, team


def masked_address(address: str) -> str:
    """``a…@example.com``: enough for the invited person to recognise, not to learn."""
    local, _, domain = address.rpartition("@")
    return f"{local[:1]}…@{domain}"


async def accept_invitation(
    session: AsyncSession, clock: Clock, token: str, email: str, password: str,
    device: Device | None = None,
) -> tuple[Member, str]:  # fmt: skip
    """Make the invited member with ``password``, when ``email`` is the invited address;
    the member and a session token."""
    invitation, _team = await open_invitation(session, clock, token)
    if email.strip().lower() != invitation.email:
        raise ValidationError("This invitation was sent to another address.")
    password_hash = await hash_password(password)
    now = clock.now()
    invitation.accepted_at = now
    member = Member(
        team_id=invitation.team_id, email=invitation.email, role=invitation.role,
        password_hash=password_hash, created_at=now,
    )  # fmt: skip
    session.add(member)
    try:
        await session.flush()
    except IntegrityError:
        await session.rollback()
        raise ValidationError(f"{invitation.email} is a member already.") from None
    await record_audit(session, clock, invitation.team_id, member.id, "invitation.accepted",
                       member.email, role=member.role,
                       client_address=device.address if device else None)  # fmt: skip
    return member, await open_member_session(session, clock, member, device)
