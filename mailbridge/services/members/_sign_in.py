"""Members sign in with their email and a password, and sign out.

Passwords are hashed with argon2id (argon2-cffi's defaults, which follow RFC 9106's
second recommendation); a hash made with older parameters is upgraded at the next
sign-in. Hashing takes tens of milliseconds of CPU, so it runs in a worker thread, and
an unknown address costs the same work as a known one (a dummy hash is verified), so
timing does not tell which addresses are members. Signing in opens a member session
(``mbs_…``, the token the dashboard's cookie carries); signing out revokes it. Sessions
follow the password: an operator's reset ends every session of the member, a change
the member makes ends all but the session that made it (``_member_sessions``).
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ValidationError
from mailbridge.services.accounts import (
    Device,
    member_session_prefix,
    open_member_session,
    token_digest,
)
from mailbridge.services.members._audit import record_audit
from mailbridge.services.members._member_sessions import revoke_member_sessions
from mailbridge.storage.tables import Member, MemberSession, Team

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024

_hasher = PasswordHasher()


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _hasher.hash("not a password anybody has")


def checked_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationError(f"A password has at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValidationError(f"A password has at most {MAX_PASSWORD_LENGTH} characters.")
    return password


async def hash_password(password: str) -> str:
    return await asyncio.to_thread(_hasher.hash, checked_password(password))


def _verify(stored: str | None, password: str) -> bool:
    try:
        return _hasher.verify(stored or _dummy_hash(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


async def set_password(
    session: AsyncSession, clock: Clock, member: Member, password: str,
    actor_member_id: str | None = None,
) -> int:  # fmt: skip
    """A reset (the member forgot it): every session of the member ends; how many did."""
    member.password_hash = await hash_password(password)
    await record_audit(session, clock, member.team_id, actor_member_id, "member.password_reset",
                       member.email)  # fmt: skip
    ended = await revoke_member_sessions(session, clock, member, actor_member_id)
    await session.commit()
    return ended


async def change_password(
    session: AsyncSession, clock: Clock, member_id: str, current: str, password: str,
    current_session: str,
) -> int:  # fmt: skip
    """The member's own change: their password is checked, every other session ends;
    how many did. A wrong current password is a ``validation_error``."""
    member = await session.get(Member, member_id)
    if member is None:
        raise ValidationError("No such member.")
    if not await asyncio.to_thread(_verify, member.password_hash, current[:MAX_PASSWORD_LENGTH]):
        raise ValidationError("The current password is wrong.")
    member.password_hash = await hash_password(password)
    await record_audit(session, clock, member.team_id, member.id, "member.password_changed",
                       member.email)  # fmt: skip
    ended = await revoke_member_sessions(session, clock, member, member.id, keep=current_session)
    await session.commit()
    return ended


async def sign_in(
    session: AsyncSession, clock: Clock, email: str, password: str, team: str | None = None,
    device: Device | None = None,
) -> tuple[Member, str] | None:  # fmt: skip
    """The member and a new session token, or None when the address and password do not
    match a member (of ``team``, a name or id, when given; else the member's first team
    by age)."""
    statement = (
        select(Member)
        .join(Team, Team.id == Member.team_id)
        .where(Member.email == email.strip().lower())
        .order_by(Member.created_at, Member.id)
    )
    if team:
        statement = statement.where((Team.id == team) | (Team.name == team))
    candidates = list((await session.scalars(statement)).all())
    password = password[:MAX_PASSWORD_LENGTH]
    if not candidates:
        await asyncio.to_thread(_verify, None, password)
        return None
    for member in candidates:
        if await asyncio.to_thread(_verify, member.password_hash, password):
            if member.password_hash and _hasher.check_needs_rehash(member.password_hash):
                member.password_hash = await hash_password(password)
            return member, await open_member_session(session, clock, member, device)
    return None


async def sign_out(session: AsyncSession, clock: Clock, token: str) -> bool:
    """Revoke the member session ``token``; whether there was one to revoke."""
    prefix = member_session_prefix(token)
    if prefix is None:
        return False
    result = await session.execute(
        update(MemberSession)
        .where(
            MemberSession.token_prefix == prefix,
            MemberSession.token_hash == token_digest(token),
            MemberSession.revoked_at.is_(None),
        )
        .values(revoked_at=clock.now())
    )
    await session.commit()
    return bool(getattr(result, "rowcount", 0))
