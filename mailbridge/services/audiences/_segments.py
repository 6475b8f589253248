"""Segments: a filter over an audience's contacts, plus contacts added by hand.

``audience_id`` and ``domain`` are fixed at creation. Membership is resolved by the
database (see :mod:`mailbridge.services.audiences._segment_filters`).
"""

from __future__ import annotations

from typing import Any

import pydantic
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.audiences import _audiences as audiences
from mailbridge.services.audiences._contacts import find_contact
from mailbridge.services.audiences._properties import registered_properties
from mailbridge.services.audiences._segment_filters import (
    SegmentFilter,
    check_filter,
    membership_condition,
)
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned, is_uuid
from mailbridge.storage.tables import Contact, Domain, Segment, SegmentMember

FILTER_FIELDS = ("status", "email_contains", "property_filters", "engagement")


def segment_view(segment: Segment) -> dict[str, Any]:
    return {
        "object": "segment",
        "id": segment.id,
        "name": segment.name,
        "audience_id": segment.audience_id,
        "domain": segment.domain,
        "filter": segment.filter,
        "created_at": isoformat_ms(segment.created_at),
        "updated_at": isoformat_ms(segment.updated_at),
    }


def _name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 200:
        raise ValidationError("`name` must be 1 to 200 characters.")
    return name


async def _checked_filter(
    session: AsyncSession, team_id: str, segment_filter: SegmentFilter
) -> dict[str, Any]:
    check_filter(segment_filter, await registered_properties(session, team_id))
    return segment_filter.stored()


async def create_segment(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    name: str,
    segment_filter: SegmentFilter,
    audience_id: str | None = None,
    domain: str | None = None,
) -> Segment:
    if audience_id is None:
        audience = await audiences.default_audience(session, clock, team_id)
    else:
        audience = await audiences.get_audience(session, team_id, audience_id)
    if domain is not None:
        domain = domain.strip().lower()
        owned = await session.scalar(
            select(Domain.id).where(Domain.team_id == team_id, Domain.name == domain)
        )
        if owned is None:
            raise ValidationError(f"`domain` {domain} is not a domain of this account.")
    now = clock.now()
    segment = Segment(
        team_id=team_id,
        audience_id=audience.id,
        domain=domain,
        name=_name(name),
        filter=await _checked_filter(session, team_id, segment_filter),
        created_at=now,
        updated_at=now,
    )
    session.add(segment)
    await session.commit()
    return segment


async def get_segment(session: AsyncSession, team_id: str, segment_id: str) -> Segment:
    return await get_owned(session, Segment, team_id, segment_id, "Segment")


async def list_segments(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Segment]:
    return await paginate(session, select(Segment).where(Segment.team_id == team_id), Segment, page)


async def update_segment(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    segment_id: str,
    changes: dict[str, Any],
) -> Segment:
    """Apply a PATCH body: ``name`` and any of the filter's fields (absent keeps, null clears)."""
    if "audience_id" in changes or "domain" in changes:
        raise ValidationError("A segment's `audience_id` and `domain` cannot be changed.")
    segment = await get_segment(session, team_id, segment_id)
    if "name" in changes:
        if not isinstance(changes["name"], str):
            raise ValidationError("`name` must be a string.")
        segment.name = _name(changes["name"])
    if "filter" in changes:
        patch = changes["filter"]
        if patch is None:
            patch = {}
        if not isinstance(patch, dict):
            raise ValidationError("`filter` must be an object.")
        merged = dict(segment.filter)
        merged.update({k: v for k, v in patch.items() if k in FILTER_FIELDS})
        if merged.get("status") is None:
            merged["status"] = "all"
        if merged.get("property_filters") == []:
            merged["property_filters"] = None
        try:
            parsed = SegmentFilter.model_validate(merged)
        except pydantic.ValidationError as exc:
            problem = exc.errors()[0]
            field = ".".join(str(part) for part in ("filter", *problem["loc"]))
            raise ValidationError(f"Invalid `{field}`: {problem['msg']}.") from None
        segment.filter = await _checked_filter(session, team_id, parsed)
    segment.updated_at = clock.now()
    await session.commit()
    return segment


async def delete_segment(session: AsyncSession, team_id: str, segment_id: str) -> str:
    segment = await get_segment(session, team_id, segment_id)
    await session.delete(segment)
    await session.commit()
    return segment_id


async def members_condition(session: AsyncSession, segment: Segment) -> Any:
    properties = await registered_properties(session, segment.team_id)
    return membership_condition(
        segment.id, segment.audience_id, SegmentFilter.model_validate(segment.filter), properties
    )


async def segment_contacts(
    session: AsyncSession, team_id: str, segment_id: str, page: PageRequest
) -> Page[Contact]:
    segment = await get_segment(session, team_id, segment_id)
    query = select(Contact).where(await members_condition(session, segment))
    return await paginate(session, query, Contact, page)


async def count_members(session: AsyncSession, segment: Segment) -> int:
    query = (
        select(func.count()).select_from(Contact).where(await members_condition(session, segment))
    )
    return int(await session.scalar(query) or 0)


async def member_ids(session: AsyncSession, segment: Segment) -> list[str]:
    """Every member's id (for campaign fan-out and the benchmark); resolved in SQL."""
    query = select(Contact.id).where(await members_condition(session, segment))
    return list((await session.scalars(query)).all())


async def is_member(session: AsyncSession, segment: Segment, contact_id: str) -> bool:
    query = select(Contact.id).where(
        Contact.id == contact_id, await members_condition(session, segment)
    )
    return (await session.scalar(query)) is not None


async def _member_candidate(
    session: AsyncSession, team_id: str, segment: Segment, contact_ref: str
) -> Contact:
    """The contact named by id (any audience: a wrong one is a 422) or by email (this audience)."""
    audience_id = None if is_uuid(contact_ref) else segment.audience_id
    return await find_contact(session, team_id, contact_ref, audience_id)


async def add_segment_member(
    session: AsyncSession, clock: Clock, team_id: str, segment_id: str, contact_ref: str
) -> tuple[Segment, Contact]:
    segment = await get_segment(session, team_id, segment_id)
    contact = await _member_candidate(session, team_id, segment, contact_ref)
    if contact.audience_id != segment.audience_id:
        raise ValidationError("The contact belongs to another audience than the segment.")
    exists_already = await session.get(SegmentMember, (segment.id, contact.id))
    if exists_already is None:
        session.add(
            SegmentMember(segment_id=segment.id, contact_id=contact.id, created_at=clock.now())
        )
        await session.commit()
    return segment, contact


async def remove_segment_member(
    session: AsyncSession, team_id: str, segment_id: str, contact_ref: str
) -> tuple[Segment, Contact]:
    segment = await get_segment(session, team_id, segment_id)
    contact = await _member_candidate(session, team_id, segment, contact_ref)
    result = await session.execute(
        delete(SegmentMember).where(
            SegmentMember.segment_id == segment.id, SegmentMember.contact_id == contact.id
        )
    )
    if not getattr(result, "rowcount", 0):
        raise NotFound("The contact was not added to this segment.")
    await session.commit()
    return segment, contact


async def segments_of_contact(
    session: AsyncSession, team_id: str, contact_ref: str, page: PageRequest
) -> Page[Segment]:
    """The segments a contact belongs to (by filter or by hand)."""
    contact = await find_contact(session, team_id, contact_ref)
    properties = await registered_properties(session, team_id)
    candidates = (
        await session.scalars(
            select(Segment).where(
                Segment.team_id == team_id, Segment.audience_id == contact.audience_id
            )
        )
    ).all()
    matching: list[str] = []
    for segment in candidates:
        condition = membership_condition(
            segment.id,
            segment.audience_id,
            SegmentFilter.model_validate(segment.filter),
            properties,
        )
        found = await session.scalar(select(Contact.id).where(Contact.id == contact.id, condition))
        if found is not None:
            matching.append(segment.id)
    query = select(Segment).where(Segment.team_id == team_id, Segment.id.in_(matching))
    return await paginate(session, query, Segment, page)


async def segment_size(session: AsyncSession, team_id: str, segment_id: str) -> int:
    """How many contacts the team's segment holds now (the dashboard's count)."""
    return await count_members(session, await get_segment(session, team_id, segment_id))
