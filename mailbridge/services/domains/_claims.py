"""Claims: a team proves it owns a domain another team has verified, and takes it over.

The flow (``POST /domains/claim {name}``; the Resend SDK's ``Domains.Claims``):

1. The first call answers a new *pending* claim (201) with a TXT record to publish:
   ``_mailbridge-challenge.<name>`` = ``mailbridge-claim=<token>``. It is valid
   for seven days; after that a new call starts a new claim with a new token.
2. Each later call (200), or ``POST /domains/:domain_id/claim/verify``, looks the
   TXT record up. Once it resolves, the claim *completes* in one transaction: every
   domain of other teams in a sending status at ``name`` or below it moves to the
   claiming team — same id, same DKIM key, still verified, so mail keeps flowing
   without a DNS change. The claimant's own unverified copy of a moved name is
   removed (superseded). Events: ``domain.updated`` in the claimant's team for each
   moved domain, ``domain.deleted`` (with ``reason: "claimed"``) in the team that
   lost it, ``domain.deleted`` for a superseded copy.
3. ``GET /domains/:domain_id/claim`` shows the claimant's latest claim on that name.

Refusals: nothing to claim (no other team holds ``name`` or a subdomain) is 422
``validation_error``; a name held through its *parent* is 409 ``domain_conflict``
(a record under a subdomain does not prove the parent: claim the parent); a
completion that would pass the claimant's plan cap is 402 ``plan_limit_reached``.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.config import Settings
from mailbridge.errors import DomainConflict, NotFound, ValidationError
from mailbridge.services.domains._domains import (
    domain_view,
    ensure_within_cap,
    find_domain,
    holders,
    is_at_or_under,
    may_send,
    normalize_name,
    record_domain_event,
)
from mailbridge.services.domains._records import RECORD_TTL, SENDING_STATUSES, txt_values
from mailbridge.services.kernel import record_event
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Domain, DomainClaim

CHALLENGE_LABEL = "_mailbridge-challenge"
CHALLENGE_PREFIX = "mailbridge-claim="
CLAIM_LIFETIME = timedelta(days=7)
PENDING, COMPLETED, EXPIRED = "pending", "completed", "expired"


def challenge_value(claim: DomainClaim) -> str:
    return f"{CHALLENGE_PREFIX}{claim.token}"


def claim_status(claim: DomainClaim, clock: Clock) -> str:
    if claim.status == PENDING and claim.created_at + CLAIM_LIFETIME <= clock.now():
        return EXPIRED
    return claim.status


async def claim_domain(
    session: AsyncSession, clock: Clock, settings: Settings, team_id: str, raw_name: str
) -> tuple[DomainClaim, bool]:
    """Start or advance the claim on ``raw_name``; True when a new claim was started."""
    name = normalize_name(raw_name)
    held = await holders(session, team_id, name)
    parents = [domain for domain in held if not is_at_or_under(domain.name, name)]
    if parents:
        raise DomainConflict(
            f"{parents[0].name} is verified by another account; claim {parents[0].name} instead."
        )
    claim = await _latest_claim(session, team_id, name)
    if not held:
        if claim is not None and claim.status == COMPLETED:
            return claim, False
        raise ValidationError(f"No other account has verified {name}; add it with POST /domains.")
    if claim is None or claim_status(claim, clock) != PENDING:
        claim = DomainClaim(
            team_id=team_id, name=name, token=secrets.token_hex(16), created_at=clock.now()
        )
        session.add(claim)
        await session.commit()
        return claim, True  # its random token cannot be published yet: no lookup
    await _try_to_complete(session, clock, settings, claim)
    return claim, False


async def claim_for_domain(session: AsyncSession, team_id: str, domain_id: str) -> DomainClaim:
    """The team's latest claim on the name of domain ``domain_id`` (whoever holds it)."""
    name = None
    if is_uuid(domain_id):
        name = await session.scalar(select(Domain.name).where(Domain.id == domain_id))
    claim = await _latest_claim(session, team_id, name) if name else None
    if claim is None:
        raise NotFound("Domain claim not found.")
    return claim


async def verify_claim(
    session: AsyncSession, clock: Clock, settings: Settings, team_id: str, domain_id: str
) -> DomainClaim:
    claim = await claim_for_domain(session, team_id, domain_id)
    if claim_status(claim, clock) == PENDING:
        await _try_to_complete(session, clock, settings, claim)
    return claim


async def _latest_claim(session: AsyncSession, team_id: str, name: str) -> DomainClaim | None:
    query = (
        select(DomainClaim)
        .where(DomainClaim.team_id == team_id, DomainClaim.name == name)
        .order_by(DomainClaim.created_at.desc(), DomainClaim.id.desc())
        .limit(1)
    )
    claim: DomainClaim | None = await session.scalar(query)
    return claim


async def _try_to_complete(
    session: AsyncSession, clock: Clock, settings: Settings, claim: DomainClaim
) -> None:
    await session.commit()  # no transaction stays open across the lookup
    published = await txt_values(settings, f"{CHALLENGE_LABEL}.{claim.name}")
    if published is None or challenge_value(claim) not in published:
        return
    team_id, now = claim.team_id, clock.now()
    held = await holders(session, team_id, claim.name)
    moving = [domain for domain in held if is_at_or_under(domain.name, claim.name)]
    superseded = [
        own
        for own in [await find_domain(session, team_id, d.name) for d in moving]
        if own is not None
    ]
    await ensure_within_cap(
        session, team_id, len(moving) - sum(1 for own in superseded if may_send(own))
    )
    for own in superseded:
        record_domain_event(session, clock, settings, own, "domain.deleted")
        await session.delete(own)
    await session.flush()  # the names are free in the claimant's team before the moves
    for domain in moving:
        record_event(
            session,
            clock,
            domain.team_id,
            "domain.deleted",
            {**domain_view(domain, settings), "reason": "claimed"},
        )
        domain.team_id = team_id
        domain.updated_at = now
        record_domain_event(session, clock, settings, domain, "domain.updated")
    claim.status = COMPLETED
    claim.completed_at = now
    await session.commit()


async def claim_view(session: AsyncSession, clock: Clock, claim: DomainClaim) -> dict[str, Any]:
    """Resend's ``DomainClaim``; ``domain_id`` names the domain the claim moves (or moved)."""
    query = select(Domain).where(Domain.name == claim.name)
    if claim.status == COMPLETED:
        query = query.where(Domain.team_id == claim.team_id)
    else:
        query = query.where(Domain.team_id != claim.team_id, Domain.status.in_(SENDING_STATUSES))
    domain = await session.scalar(query.limit(1))
    return {
        "object": "domain_claim",
        "id": claim.id,
        "name": claim.name,
        "status": claim_status(claim, clock),
        "domain_id": domain.id if domain is not None else None,
        "region": domain.region if domain is not None else None,
        "record": {
            "type": "TXT",
            "name": CHALLENGE_LABEL,
            "value": challenge_value(claim),
            "ttl": RECORD_TTL,
        },
        "blocked_reason": None,
        "failure_reason": None,
        "created_at": isoformat_ms(claim.created_at),
        "expires_at": isoformat_ms(claim.created_at + CLAIM_LIFETIME),
    }
