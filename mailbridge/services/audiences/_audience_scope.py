"""The audience an ``/audiences/:id/...`` path names: an audience's id, or a segment's.

Resend's SDKs now treat audiences as segments: SDK 2.x's ``Audiences.create`` posts to
``/segments``, then ``Contacts.create({"audience_id": id})`` posts that segment's id to
``/audiences/:id/contacts`` (and its get, update, remove and list to the paths below
it). So where an audience's id is expected, a segment's id names the segment's
audience, narrowed to the segment: a contact created there joins the audience and the
segment (as a hand-added member), and the list shows the segment's members. A single
contact is found in the audience, as under the audience itself.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import NotFound
from mailbridge.services.audiences._audiences import get_audience
from mailbridge.services.audiences._contact_filters import ContactFilters, filtered
from mailbridge.services.audiences._segments import members_condition
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Audience, Contact, Segment


@dataclass(frozen=True)
class AudienceScope:
    audience: Audience
    segment: Segment | None = None

    @property
    def segment_ids(self) -> list[str]:
        """The segments a contact created in this scope joins by hand."""
        return [self.segment.id] if self.segment is not None else []


async def audience_scope(
    session: AsyncSession, team_id: str, audience_or_segment_id: str
) -> AudienceScope:
    """The audience (and segment) an id names; 404 ``Audience not found`` for neither."""
    try:
        return AudienceScope(await get_audience(session, team_id, audience_or_segment_id))
    except NotFound:
        segment = None
        if is_uuid(audience_or_segment_id):
            segment = await session.scalar(
                select(Segment).where(
                    Segment.id == audience_or_segment_id, Segment.team_id == team_id
                )
            )
        if segment is None:
            raise
    return AudienceScope(await get_audience(session, team_id, segment.audience_id), segment)


async def list_audience_contacts(
    session: AsyncSession,
    team_id: str,
    audience_or_segment_id: str,
    filters: ContactFilters,
    page: PageRequest,
) -> Page[Contact]:
    """The contacts of ``GET /audiences/:id/contacts``, narrowed by ``filters`` (whose own
    ``audience_id`` the path's replaces)."""
    scope = await audience_scope(session, team_id, audience_or_segment_id)
    scoped = dataclasses.replace(filters, audience_id=scope.audience.id)
    query = filtered(select(Contact).where(Contact.team_id == team_id), scoped)
    if scope.segment is not None:
        query = query.where(await members_condition(session, scope.segment))
    return await paginate(session, query, Contact, page)
