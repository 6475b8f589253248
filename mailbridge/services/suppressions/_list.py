"""The suppression list as the API shows it: list, look up, add by hand, remove.

The shapes are Resend's (its SDK's ``Suppressions``): an entry has an ``origin`` of
``bounce``, ``complaint`` or ``manual`` (stored as the reason ``bounced``,
``complained``, ``manual``) and a ``source_id``, the email that bounced or
complained. Adding an address already on the list answers the existing entry.
An entry is named by its id or by its address.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import Select, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.audiences import normalize_email
from mailbridge.services.suppressions._suppress import suppress
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Suppression

Origin = Literal["bounce", "complaint", "manual"]
REASON_BY_ORIGIN: dict[str, str] = {
    "bounce": "bounced",
    "complaint": "complained",
    "manual": "manual",
}
ORIGIN_BY_REASON = {reason: origin for origin, reason in REASON_BY_ORIGIN.items()}
MAX_SUPPRESSION_BATCH_SIZE = 100


def reason_of(origin: str) -> str:
    """The stored reason for an origin (either vocabulary is accepted)."""
    if origin in REASON_BY_ORIGIN:
        return REASON_BY_ORIGIN[origin]
    if origin in ORIGIN_BY_REASON:
        return origin
    raise ValidationError("`origin` must be one of bounce, complaint, manual.")


async def list_suppressions(
    session: AsyncSession, team_id: str, origin: str | None, page: PageRequest
) -> Page[Suppression]:
    query = select(Suppression).where(Suppression.team_id == team_id)
    if origin is not None:
        query = query.where(Suppression.reason == reason_of(origin))
    return await paginate(session, query, Suppression, page)


def _named(team_id: str, id_or_email: str) -> Select[tuple[Suppression]]:
    query = select(Suppression).where(Suppression.team_id == team_id)
    if is_uuid(id_or_email):
        return query.where(Suppression.id == id_or_email)
    return query.where(Suppression.email == id_or_email.strip().lower())


async def find_suppression(session: AsyncSession, team_id: str, id_or_email: str) -> Suppression:
    """The entry named by id or address (404 when the address is not suppressed)."""
    entry = await session.scalar(_named(team_id, id_or_email))
    if entry is None:
        raise NotFound("Suppression not found.")
    return entry


async def _add(
    session: AsyncSession, clock: Clock, team_id: str, address: str, reason: str
) -> tuple[Suppression, bool]:
    email = normalize_email(address)
    existing = await session.scalar(_named(team_id, email))
    if existing is not None:
        return existing, False
    await suppress(session, clock, team_id, email, reason)
    return await find_suppression(session, team_id, email), True


async def add_suppression(
    session: AsyncSession, clock: Clock, team_id: str, address: str, origin: str = "manual"
) -> tuple[Suppression, bool]:
    """Put ``address`` on the list; the entry, and whether it is new."""
    entry, created = await _add(session, clock, team_id, address, reason_of(origin))
    await session.commit()
    return entry, created


async def add_suppressions(
    session: AsyncSession, clock: Clock, team_id: str, addresses: Sequence[str]
) -> list[Suppression]:
    """Put every address on the list (duplicates collapse), all or nothing."""
    emails = list(dict.fromkeys(normalize_email(address) for address in addresses))
    entries = [(await _add(session, clock, team_id, email, "manual"))[0] for email in emails]
    await session.commit()
    return entries


async def remove_suppression(session: AsyncSession, team_id: str, id_or_email: str) -> Suppression:
    """Take the entry off the list: the address may be sent to again."""
    entry = await find_suppression(session, team_id, id_or_email)
    await session.execute(delete(Suppression).where(Suppression.id == entry.id))
    await session.commit()
    return entry


async def remove_suppressions(
    session: AsyncSession, team_id: str, ids_or_emails: Sequence[str]
) -> list[Suppression]:
    """Remove the entries that exist among ``ids_or_emails``; the others are skipped."""
    removed: dict[str, Suppression] = {}
    for id_or_email in ids_or_emails:
        entry = await session.scalar(_named(team_id, id_or_email))
        if entry is not None:
            removed[entry.id] = entry
    if removed:
        await session.execute(delete(Suppression).where(Suppression.id.in_(list(removed))))
    await session.commit()
    return list(removed.values())


def suppression_summary(entry: Suppression) -> dict[str, Any]:
    return {
        "id": entry.id,
        "email": entry.email,
        "origin": ORIGIN_BY_REASON.get(entry.reason, entry.reason),
        "source_id": entry.source_email_id,
        "created_at": isoformat_ms(entry.created_at),
    }


def suppression_view(entry: Suppression) -> dict[str, Any]:
    return {"object": "suppression", **suppression_summary(entry)}
