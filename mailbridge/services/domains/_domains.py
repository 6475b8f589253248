"""Sending domains: create, list, read, change and remove; who may hold a name; plan caps.

A domain is created with a fresh DKIM key and answers the DNS records to publish
(``services.domain_records``); ``services.domain_verification`` checks them and
``services.domain_claims`` moves a domain between teams. Rules that hold everywhere:

- *Holding a name.* A domain in a sending status (verified, partially_verified,
  partially_failed) holds its name, its parents and its subdomains: no other team
  may create or verify any of them (409 ``domain_conflict``) but through a claim.
- *Plan cap.* ``Plan.verified_domains`` caps how many of a team's domains are in a
  sending status. It is enforced when a domain would enter one (verification, the
  operator's ``domains add --verified``, a claim): 402 ``plan_limit_reached``.
  Creating unverified domains is never capped.
- Every change records ``domain.created``, ``domain.updated`` or ``domain.deleted``
  in the same transaction; the event data is the domain as ``GET /domains/:id`` shows it.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.config import Settings
from mailbridge.errors import DomainConflict, PlanLimitReached, ValidationError
from mailbridge.mail import dkim
from mailbridge.services.accounts import plan_named
from mailbridge.services.domains._records import (
    DKIM_SELECTOR,
    SENDING_STATUSES,
    DomainStatus,
    RecordKey,
    RecordStatus,
    domain_status,
    expected_records,
    record_keys,
    record_statuses,
)
from mailbridge.services.kernel import record_event
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned
from mailbridge.storage.tables import Domain, Team

REGIONS = ("us-east-1", "eu-west-1", "sa-east-1", "ap-northeast-1")
DEFAULT_RETURN_PATH = "send"
DEFAULT_TRACKING_SUBDOMAIN = "links"
MAX_DOMAIN_NAME_LENGTH = 253
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# A label as `normalize_label` takes it (before lower-casing), for the OpenAPI document.
LABEL_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"


class Tls(StrEnum):
    OPPORTUNISTIC = "opportunistic"
    ENFORCED = "enforced"


@dataclass(frozen=True)
class DomainOptions:
    region: str = REGIONS[0]
    return_path: str = DEFAULT_RETURN_PATH
    tracking_subdomain: str = DEFAULT_TRACKING_SUBDOMAIN
    open_tracking: bool = False
    click_tracking: bool = False
    tls: Tls = Tls.OPPORTUNISTIC
    receiving: bool = False


@dataclass(frozen=True)
class DomainChanges:
    """PATCH /domains/:id; None leaves a field as it is."""

    open_tracking: bool | None = None
    click_tracking: bool | None = None
    tls: Tls | None = None
    tracking_subdomain: str | None = None
    receiving: bool | None = None


# --- names -------------------------------------------------------------------------


def normalize_name(raw: str) -> str:
    """Lower case, no trailing dot, IDNA (punycode) labels; 422 when not a domain name."""
    name = raw.strip().rstrip(".").lower()
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValidationError(f"`{raw}` is not a valid domain name.") from None
    labels = name.split(".")
    valid = (
        len(labels) >= 2
        and len(name) <= MAX_DOMAIN_NAME_LENGTH
        and all(_LABEL.match(label) for label in labels)
        and not labels[-1].isdigit()
    )
    if not valid:
        raise ValidationError(f"`{raw}` is not a valid domain name.")
    return name


def normalize_label(raw: str, field: str) -> str:
    label = raw.strip().lower()
    if not _LABEL.match(label):
        raise ValidationError(f"`{field}` must be one DNS label (letters, digits, hyphens).")
    return label


def _related_names(name: str) -> list[str]:
    """``name`` and its parents, short of the top-level domain."""
    labels = name.split(".")
    return [".".join(labels[i:]) for i in range(len(labels) - 1)]


def is_at_or_under(name: str, ancestor: str) -> bool:
    return name == ancestor or name.endswith("." + ancestor)


# --- holding names and plan caps ---------------------------------------------------


async def holders(session: AsyncSession, team_id: str, name: str) -> list[Domain]:
    """Other teams' domains in a sending status at ``name``, above it or below it."""
    query = select(Domain).where(
        Domain.team_id != team_id,
        Domain.status.in_(SENDING_STATUSES),
        or_(Domain.name.in_(_related_names(name)), Domain.name.like(f"%.{name}")),
    )
    return list((await session.scalars(query.order_by(Domain.name))).all())


async def ensure_no_conflict(session: AsyncSession, team_id: str, name: str) -> None:
    held = await holders(session, team_id, name)
    if held:
        raise DomainConflict(
            f"{held[0].name} is verified by another account; "
            "prove you own it with POST /domains/claim."
        )


async def sending_domain_count(session: AsyncSession, team_id: str) -> int:
    query = select(func.count()).where(
        Domain.team_id == team_id, Domain.status.in_(SENDING_STATUSES)
    )
    return int(await session.scalar(query) or 0)


async def ensure_within_cap(session: AsyncSession, team_id: str, adding: int = 1) -> None:
    """402 when ``adding`` more sending domains would pass the team's plan cap."""
    plan = await session.scalar(select(Team.plan).where(Team.id == team_id))
    cap = plan_named(plan or "free").verified_domains
    if cap is None:
        return
    if await sending_domain_count(session, team_id) + adding > cap:
        raise PlanLimitReached(
            f"Your plan allows {cap} verified domain{'s' if cap != 1 else ''}; "
            "remove one or upgrade the plan to verify another."
        )


# --- status bookkeeping ------------------------------------------------------------


def may_send(domain: Domain) -> bool:
    """Spec §3.4: verified, partially_verified and partially_failed domains may send."""
    return domain.status in SENDING_STATUSES


def set_record_statuses(domain: Domain, statuses: dict[str, str], now: datetime) -> bool:
    """Store the records' statuses and the status they give; True when anything changed."""
    keys = {key.value for key in record_keys(domain)}
    statuses = {key: value for key, value in statuses.items() if key in keys}
    status = domain_status(statuses)
    changed = statuses != (domain.record_status or {}) or status != domain.status
    could_send = may_send(domain)
    domain.record_status = statuses
    domain.status = status.value
    if status in SENDING_STATUSES and not could_send:
        domain.verified_at = now
    elif status not in SENDING_STATUSES:
        domain.verified_at = None
    if changed:
        domain.updated_at = now
    return changed


def record_domain_event(
    session: AsyncSession, clock: Clock, settings: Settings, domain: Domain, type: str
) -> None:
    """Record ``type`` in the domain's team; the data is the domain as the API shows it."""
    record_event(session, clock, domain.team_id, type, domain_view(domain, settings))


# --- create, read, change, remove --------------------------------------------------


async def create_domain(
    session: AsyncSession,
    clock: Clock,
    settings: Settings,
    team_id: str,
    name: str,
    options: DomainOptions | None = None,
    *,
    verified: bool = False,
) -> Domain:
    """Create a domain with a fresh DKIM key; ``verified`` (operators) trusts DNS as is."""
    options = options or DomainOptions()
    name = normalize_name(name)
    if options.region not in REGIONS:
        raise ValidationError(f"`region` must be one of {', '.join(REGIONS)}.")
    return_path = normalize_label(options.return_path, "custom_return_path")
    tracking = normalize_label(options.tracking_subdomain, "tracking_subdomain")
    if return_path == tracking:
        raise ValidationError("`custom_return_path` and `tracking_subdomain` must differ.")
    await _ensure_name_free(session, team_id, name)
    await ensure_no_conflict(session, team_id, name)
    if verified:
        await ensure_within_cap(session, team_id)
    keys = await asyncio.to_thread(dkim.generate_key_pair)
    now = clock.now()
    domain = Domain(
        team_id=team_id,
        name=name,
        region=options.region,
        dkim_selector=DKIM_SELECTOR,
        dkim_private_key=keys.private_key_pem,
        dkim_public_key=keys.public_key,
        return_path=return_path,
        tracking_subdomain=tracking,
        open_tracking=options.open_tracking,
        click_tracking=options.click_tracking,
        receiving=options.receiving,
        tls=options.tls.value,
        status=DomainStatus.NOT_STARTED.value,
        record_status={},
        created_at=now,
        updated_at=now,
    )
    initial = RecordStatus.VERIFIED if verified else RecordStatus.NOT_STARTED
    set_record_statuses(domain, _all(domain, initial), now)
    session.add(domain)
    try:
        await session.flush()
    except IntegrityError:
        await session.rollback()
        raise ValidationError(f"You have added {name} already.") from None
    record_domain_event(session, clock, settings, domain, "domain.created")
    await session.commit()
    return domain


def _all(domain: Domain, status: RecordStatus) -> dict[str, str]:
    return {key.value: status.value for key in record_keys(domain)}


async def _ensure_name_free(session: AsyncSession, team_id: str, name: str) -> None:
    query = select(Domain.id).where(Domain.team_id == team_id, Domain.name == name)
    if await session.scalar(query) is not None:
        raise ValidationError(f"You have added {name} already.")


async def mark_verified(
    session: AsyncSession, clock: Clock, settings: Settings, domain: Domain
) -> Domain:
    """The operator's word that every record is published: all records verified."""
    await ensure_no_conflict(session, domain.team_id, domain.name)
    if not may_send(domain):
        await ensure_within_cap(session, domain.team_id)
    domain.last_checked_at = None  # checked elsewhere: the runner leaves it alone
    if set_record_statuses(domain, _all(domain, RecordStatus.VERIFIED), clock.now()):
        record_domain_event(session, clock, settings, domain, "domain.updated")
    await session.commit()
    return domain


async def list_domains(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Domain]:
    return await paginate(session, select(Domain).where(Domain.team_id == team_id), Domain, page)


async def get_domain(session: AsyncSession, team_id: str, domain_id: str) -> Domain:
    return await get_owned(session, Domain, team_id, domain_id, "Domain")


async def find_domain(session: AsyncSession, team_id: str, name: str) -> Domain | None:
    query = select(Domain).where(Domain.team_id == team_id, Domain.name == name)
    domain: Domain | None = await session.scalar(query)
    return domain


async def update_domain(
    session: AsyncSession,
    clock: Clock,
    settings: Settings,
    team_id: str,
    domain_id: str,
    changes: DomainChanges,
) -> Domain:
    """Change tracking and TLS; a new or moved tracking record starts unchecked."""
    domain = await get_domain(session, team_id, domain_id)
    previous = record_statuses(domain)
    previous_subdomain = domain.tracking_subdomain
    if changes.tracking_subdomain is not None:
        subdomain = normalize_label(changes.tracking_subdomain, "tracking_subdomain")
        if subdomain == domain.return_path:
            raise ValidationError("`tracking_subdomain` must differ from the return path.")
        domain.tracking_subdomain = subdomain
    if changes.open_tracking is not None:
        domain.open_tracking = changes.open_tracking
    if changes.click_tracking is not None:
        domain.click_tracking = changes.click_tracking
    if changes.tls is not None:
        domain.tls = changes.tls.value
    if changes.receiving is not None:
        domain.receiving = changes.receiving
    statuses = record_statuses(domain)
    tracking = RecordKey.TRACKING.value
    if tracking in statuses and domain.tracking_subdomain != previous_subdomain:
        statuses[tracking] = RecordStatus.NOT_STARTED.value
    elif tracking in statuses:
        statuses[tracking] = previous.get(tracking, RecordStatus.NOT_STARTED.value)
    now = clock.now()
    set_record_statuses(domain, statuses, now)
    domain.updated_at = now
    record_domain_event(session, clock, settings, domain, "domain.updated")
    await session.commit()
    return domain


async def delete_domain(
    session: AsyncSession, clock: Clock, settings: Settings, team_id: str, domain_id: str
) -> Domain:
    domain = await get_domain(session, team_id, domain_id)
    record_domain_event(session, clock, settings, domain, "domain.deleted")
    await session.delete(domain)
    await session.commit()
    return domain


# --- for the email pipeline --------------------------------------------------------


async def sending_domain(session: AsyncSession, team_id: str, name: str) -> Domain | None:
    """The team's domain ``name`` when it may send now; None otherwise (or a bad name)."""
    try:
        normalized = normalize_name(name)
    except ValidationError:
        return None
    domain = await find_domain(session, team_id, normalized)
    return domain if domain is not None and may_send(domain) else None


async def sending_domain_names(session: AsyncSession, team_id: str) -> list[str]:
    """The names of the team's domains that may send now, sorted."""
    query = select(Domain.name).where(
        Domain.team_id == team_id, Domain.status.in_(SENDING_STATUSES)
    )
    return sorted((await session.scalars(query)).all())


async def receiving_domain(session: AsyncSession, name: str) -> Domain | None:
    """The verified domain ``name`` that receives mail (one team holds a verified name)."""
    try:
        normalized = normalize_name(name)
    except ValidationError:
        return None
    found = await session.scalars(
        select(Domain).where(
            Domain.name == normalized, Domain.receiving, Domain.status.in_(SENDING_STATUSES)
        )
    )
    return found.first()


# --- views -------------------------------------------------------------------------


def domain_summary_view(domain: Domain) -> dict[str, Any]:
    """A list item (Resend's list carries no records)."""
    return {
        "object": "domain",
        "id": domain.id,
        "name": domain.name,
        "status": domain.status,
        "created_at": isoformat_ms(domain.created_at),
        "region": domain.region,
        "capabilities": {
            "sending": "enabled",
            "receiving": "enabled" if domain.receiving else "disabled",
        },
    }


def domain_view(domain: Domain, settings: Settings) -> dict[str, Any]:
    statuses = record_statuses(domain)
    return {
        **domain_summary_view(domain),
        "open_tracking": domain.open_tracking,
        "click_tracking": domain.click_tracking,
        "tracking_subdomain": domain.tracking_subdomain,
        "tls": domain.tls,
        "receiving": domain.receiving,
        "records": [
            record.view(statuses[record.key.value]) for record in expected_records(domain, settings)
        ],
    }
