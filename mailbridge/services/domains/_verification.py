"""Checking a domain's DNS: on request (POST /domains/:id/verify) and again by the runner.

A check reads the domain, ends the transaction, looks every record up (DNS never
runs inside a database transaction), then applies the result to a fresh copy of
the row in a second short transaction. ``last_checked_at`` is the time of the last
check by mailbridge; domains an operator marked verified (``domains add --verified``:
DNS checked elsewhere) and domains nobody asked to verify keep it unset, and the
runner leaves them alone until someone calls verify.

The runner's tick re-checks, in batches, every domain whose last check is older
than ``MAILBRIDGE_DOMAIN_RECHECK_INTERVAL``. It claims a batch by stamping
``last_checked_at`` first (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so several
runners never check the same domain twice, and a runner killed mid-check only
delays that domain's next check.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.config import Settings
from mailbridge.errors import ApiError, NotFound
from mailbridge.services.domains._domains import (
    ensure_no_conflict,
    ensure_within_cap,
    get_domain,
    may_send,
    record_domain_event,
    set_record_statuses,
)
from mailbridge.services.domains._records import (
    SENDING_STATUSES,
    DomainStatus,
    check_records,
    domain_status,
    expected_records,
    merge_check,
    record_statuses,
)
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Domain

logger = logging.getLogger(__name__)

RECHECK_BATCH = 20
RECHECK_MAX_BATCHES = 50  # per tick; what is left waits for the next tick


async def verify_domain(
    session: AsyncSession, clock: Clock, settings: Settings, team_id: str, domain_id: str
) -> Domain:
    """Check the domain's records now and store the outcome.

    409 ``domain_conflict`` when another team holds the name; 402
    ``plan_limit_reached`` when the domain cannot send yet and the team is at its
    cap (checked before any lookup, and again before storing, for races).
    """
    domain = await get_domain(session, team_id, domain_id)
    await ensure_no_conflict(session, team_id, domain.name)
    if not may_send(domain):
        await ensure_within_cap(session, team_id)
    records = expected_records(domain, settings)
    name = domain.name
    await session.commit()  # no transaction stays open across the lookups
    checked = await check_records(settings, name, records)
    fresh = await _reload(session, domain_id)
    if fresh is None or fresh.team_id != team_id:
        raise NotFound("Domain not found.")
    await _apply(session, clock, settings, fresh, checked)
    await session.commit()
    return fresh


async def _reload(session: AsyncSession, domain_id: str) -> Domain | None:
    query = select(Domain).where(Domain.id == domain_id).execution_options(populate_existing=True)
    domain: Domain | None = await session.scalar(query)
    return domain


async def _apply(
    session: AsyncSession,
    clock: Clock,
    settings: Settings,
    domain: Domain,
    checked: dict[str, str],
) -> None:
    """Store a check's outcome; raises when the domain would newly send but may not."""
    previous = record_statuses(domain)
    statuses = merge_check(previous, {k: v for k, v in checked.items() if k in previous})
    if domain_status(statuses) in SENDING_STATUSES and not may_send(domain):
        await ensure_no_conflict(session, domain.team_id, domain.name)
        await ensure_within_cap(session, domain.team_id)
    now = clock.now()
    domain.last_checked_at = now
    if set_record_statuses(domain, statuses, now):
        record_domain_event(session, clock, settings, domain, "domain.updated")


# --- the runner's periodic re-check ------------------------------------------------


async def recheck_due_domains(context: ServiceContext) -> int:
    """Re-check domains whose last check is older than the interval; returns how many."""
    interval = timedelta(seconds=context.settings.domain_recheck_interval)
    done = 0
    for _ in range(RECHECK_MAX_BATCHES):
        ids = await _claim_due(context, interval)
        if not ids:
            break
        await _recheck(context, ids)
        done += len(ids)
    return done


async def _claim_due(context: ServiceContext, interval: timedelta) -> list[str]:
    now = context.clock.now()
    async with context.database.session() as session:
        query = (
            select(Domain.id)
            .where(
                Domain.status != DomainStatus.NOT_STARTED.value,
                Domain.last_checked_at.is_not(None),
                Domain.last_checked_at <= now - interval,
            )
            .order_by(Domain.last_checked_at)
            .limit(RECHECK_BATCH)
            .with_for_update(skip_locked=True)
        )
        ids = list((await session.scalars(query)).all())
        if ids:
            await session.execute(
                update(Domain).where(Domain.id.in_(ids)).values(last_checked_at=now)
            )
        await session.commit()
    return ids


async def _recheck(context: ServiceContext, ids: list[str]) -> None:
    settings = context.settings
    async with context.database.session() as session:
        domains = list((await session.scalars(select(Domain).where(Domain.id.in_(ids)))).all())
        plans = [(d.id, d.name, expected_records(d, settings)) for d in domains]
    results = await asyncio.gather(
        *(check_records(settings, name, records) for _id, name, records in plans)
    )
    for (domain_id, _name, _records), checked in zip(plans, results, strict=True):
        async with context.database.session() as session:
            domain = await _reload(session, domain_id)
            if domain is None:
                continue
            try:
                await _apply(session, context.clock, settings, domain, checked)
            except ApiError as refused:
                # Conflict or plan cap: the domain keeps the status it had.
                logger.info("domain %s stays as it was: %s", domain.name, refused.message)
                await session.rollback()
                continue
            await session.commit()
