"""Who is calling, and may they do this?

One :class:`Principal` covers both kinds of caller: an API key (``mb_...``) and a
signed-in team member (``mbs_...``, the dashboard's session). Routes declare the
:class:`Action` they perform; :meth:`Principal.authorize` says yes or raises the
spec's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.errors import (
    DashboardOnly,
    InvalidApiKey,
    MissingApiKey,
    RestrictedApiKey,
    ViewOnlyMember,
)
from mailbridge.services.accounts import _tokens as tokens
from mailbridge.services.accounts._api_keys import API_KEY_KIND, Permission
from mailbridge.services.accounts._teams import MEMBER_SESSION_KIND, Role
from mailbridge.services.kernel import ServiceContext, TTLCache
from mailbridge.storage.tables import ApiKey, Member, MemberSession, Team


class Action(Enum):
    READ = "read"
    WRITE = "write"  # create, change, delete
    SEND = "send"  # the transactional send endpoints
    DASHBOARD = "dashboard"  # key and member management: never with an API key
    DASHBOARD_READ = "dashboard_read"  # what only members see (any role, never a key)


@dataclass(frozen=True)
class Principal:
    team_id: str
    plan: str
    api_key_id: str | None = None
    member_id: str | None = None
    role: Role | None = None
    permission: Permission = Permission.FULL_ACCESS
    domain: str | None = None  # a sending key limited to one domain
    expires_at: datetime | None = None

    @property
    def is_api_key(self) -> bool:
        return self.api_key_id is not None

    def authorize(self, action: Action) -> None:
        if self.is_api_key:
            # Only sending keys carry a domain; a domain alone would restrict a key too.
            sends_only = self.permission is Permission.SENDING_ACCESS or self.domain is not None
            if sends_only and action is not Action.SEND:
                raise RestrictedApiKey()
            if action in (Action.DASHBOARD, Action.DASHBOARD_READ):
                raise DashboardOnly()
        elif self.role is Role.VIEW_ONLY and action not in (Action.READ, Action.DASHBOARD_READ):
            raise ViewOnlyMember()

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def may_send_from(self, domain: str) -> bool:
        return self.domain is None or self.domain == domain.lower()

    def authorize_domain(self, domain: str) -> None:
        """Refuse what a key limited to a domain reaches on another one of its team: an
        email sent from there, say. The team's own mail, so ``restricted_api_key`` (the
        spec's name for a key used beyond its scope) rather than a foreign id's 404."""
        if not self.may_send_from(domain):
            raise RestrictedApiKey(f"This API key is restricted to the domain {self.domain}.")


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise MissingApiKey()
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise MissingApiKey()
    return token


async def authenticate(session: AsyncSession, clock: Clock, token: str) -> Principal:
    kind = token.split("_", 1)[0]
    if kind == API_KEY_KIND:
        return await _authenticate_api_key(session, clock, token)
    if kind == MEMBER_SESSION_KIND:
        return await _authenticate_member(session, clock, token)
    raise InvalidApiKey()


async def _authenticate_api_key(session: AsyncSession, clock: Clock, token: str) -> Principal:
    prefix = tokens.split(token, API_KEY_KIND)
    if prefix is None:
        raise InvalidApiKey()
    row = (
        await session.execute(
            select(ApiKey, Team.plan)
            .join(Team, Team.id == ApiKey.team_id)
            .where(ApiKey.token_prefix == prefix)
        )
    ).first()
    if row is None:
        tokens.matches(token, "0" * 64)  # same work whether or not the prefix exists
        raise InvalidApiKey()
    key, plan = row
    if not tokens.matches(token, key.token_hash):
        raise InvalidApiKey()
    if key.revoked_at is not None or (key.expires_at and key.expires_at <= clock.now()):
        raise InvalidApiKey()
    return Principal(
        team_id=key.team_id,
        plan=plan,
        api_key_id=key.id,
        permission=Permission(key.permission),
        domain=key.domain,
        expires_at=key.expires_at,
    )


async def _authenticate_member(session: AsyncSession, clock: Clock, token: str) -> Principal:
    prefix = tokens.split(token, MEMBER_SESSION_KIND)
    if prefix is None:
        raise InvalidApiKey()
    row = (
        await session.execute(
            select(MemberSession, Member, Team.plan)
            .join(Member, Member.id == MemberSession.member_id)
            .join(Team, Team.id == Member.team_id)
            .where(MemberSession.token_prefix == prefix)
        )
    ).first()
    if row is None:
        tokens.matches(token, "0" * 64)
        raise InvalidApiKey()
    member_session, member, plan = row
    if not tokens.matches(token, member_session.token_hash):
        raise InvalidApiKey()
    if member_session.revoked_at is not None or member_session.expires_at <= clock.now():
        raise InvalidApiKey()
    return Principal(
        team_id=member.team_id, plan=plan, member_id=member.id, role=Role(member.role),
        expires_at=member_session.expires_at,
    )  # fmt: skip


def principal_cache(context: ServiceContext) -> TTLCache[str, Principal]:
    """Who each token is, for a second (``ServiceContext.cache``): a change made by another
    process (a revoked key, a reset password) is seen within it; the process that makes
    one clears it."""
    cache: TTLCache[str, Principal] = context.cache("principals", ttl=1.0)
    return cache
