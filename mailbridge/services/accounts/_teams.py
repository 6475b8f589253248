"""Teams (tenants) and their members."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import ConfigurationError
from mailbridge.services.accounts import _tokens as tokens
from mailbridge.services.accounts._plans import PLANS
from mailbridge.storage.tables import Member, MemberSession, Team

MEMBER_SESSION_KIND = "mbs"
MEMBER_SESSION_LIFETIME = timedelta(days=30)


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    VIEW_ONLY = "view_only"


def checked_timezone(name: str) -> str:
    """An IANA timezone name (the team's: where campaigns' daily batches roll over)."""
    try:
        ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        raise ConfigurationError(
            f"unknown timezone {name!r}; use an IANA name like Europe/Berlin"
        ) from None
    return name


def checked_plan(plan: str) -> str:
    if plan not in PLANS:
        raise ConfigurationError(f"unknown plan {plan!r}; choose one of {', '.join(PLANS)}")
    return plan


async def create_team(
    session: AsyncSession, clock: Clock, name: str, plan: str = "free", timezone: str = "UTC"
) -> Team:
    team = Team(
        name=name,
        plan=checked_plan(plan),
        timezone=checked_timezone(timezone),
        created_at=clock.now(),
    )
    session.add(team)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise ConfigurationError(f"a team named {name!r} exists already") from None
    return team


async def count_teams(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.count()).select_from(Team)) or 0)


async def resolve_team(session: AsyncSession, ref: str | None) -> Team:
    """The team named or identified by ``ref``; with one team only, ``ref`` may be omitted."""
    if ref is None:
        teams = (await session.scalars(select(Team).limit(2))).all()
        if len(teams) == 1:
            return teams[0]
        if not teams:
            raise ConfigurationError("no team yet: run `mailbridge admin teams create --name NAME`")
        raise ConfigurationError("several teams exist: pass --team NAME")
    team = await session.scalar(select(Team).where((Team.id == ref) | (Team.name == ref)))
    if team is None:
        raise ConfigurationError(f"no team named or identified {ref!r}")
    return team


async def add_team_member(
    session: AsyncSession,
    clock: Clock,
    team: Team,
    email: str,
    role: Role,
    password_hash: str | None = None,
) -> tuple[Member, str]:
    """Add a member and open a session for them; returns the member and the session token."""
    member = Member(
        team_id=team.id, email=email.lower(), role=role.value, password_hash=password_hash,
        created_at=clock.now(),
    )  # fmt: skip
    session.add(member)
    try:
        await session.flush()
    except IntegrityError:
        await session.rollback()
        raise ConfigurationError(f"{email} is a member of {team.name} already") from None
    token = await open_member_session(session, clock, member)
    return member, token


@dataclass(frozen=True)
class Device:
    """Where a session is opened from, as the client says (for the member's session list)."""

    user_agent: str | None = None
    address: str | None = None


async def open_member_session(
    session: AsyncSession, clock: Clock, member: Member, device: Device | None = None
) -> str:
    issued = tokens.issue(MEMBER_SESSION_KIND)
    now = clock.now()
    session.add(
        MemberSession(
            member_id=member.id,
            token_prefix=issued.prefix,
            token_hash=issued.digest,
            created_at=now,
            expires_at=now + MEMBER_SESSION_LIFETIME,
            user_agent=device.user_agent[:255] if device and device.user_agent else None,
            client_address=device.address[:64] if device and device.address else None,
        )
    )
    await session.commit()
    return issued.token


async def update_team(
    session: AsyncSession, team: Team, *, timezone: str | None = None, plan: str | None = None
) -> Team:
    """Change a team's timezone and/or plan (its quotas: the API processes see a new plan
    within their principal cache's second)."""
    if timezone is not None:
        team.timezone = checked_timezone(timezone)
    if plan is not None:
        team.plan = checked_plan(plan)
    await session.commit()
    return team


def member_session_prefix(token: str) -> str | None:
    """The public lookup handle of a member session token; None when it is not one."""
    return tokens.split(token, MEMBER_SESSION_KIND)


def token_digest(token: str) -> str:
    """What is stored of a token (its SHA-256), compared to find the row it opens."""
    return tokens.digest(token)
