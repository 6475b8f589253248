"""Segments, their members, and a contact's segments (the Resend SDK's paths too)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import audiences
from mailbridge.services.audiences import (
    SegmentFilter,
    contact_view,
    registered_properties,
    segment_view,
)
from mailbridge.wire import NonBlank

router = APIRouter(tags=["segments"])


class CreateSegment(BaseModel):
    name: NonBlank = Field(min_length=1, max_length=200)
    audience_id: str | None = None
    domain: str | None = None
    # Without a filter, a segment is the contacts added to it, as Resend's SDKs expect of
    # a segment made with a name: never, by surprise, everybody in the audience.
    filter: SegmentFilter = Field(default_factory=lambda: SegmentFilter(status="members_only"))


def membership_view(segment_id: str, contact_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "object": "contact_segment", "id": segment_id, "segment_id": segment_id,
        "contact_id": contact_id, **extra,
    }  # fmt: skip


@router.post("/segments", status_code=201)
async def create_segment(
    body: CreateSegment, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    segment = await audiences.create_segment(
        session, context.clock, principal.team_id, body.name, body.filter,
        body.audience_id, body.domain,
    )  # fmt: skip
    return segment_view(segment)


@router.get("/segments")
async def list_segments(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    return list_body(await audiences.list_segments(session, principal.team_id, page), segment_view)


@router.get("/segments/{segment_id}")
async def get_segment(segment_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    return segment_view(await audiences.get_segment(session, principal.team_id, segment_id))


@router.patch("/segments/{segment_id}")
async def update_segment(
    segment_id: str,
    body: Annotated[dict[str, Any], Body()],
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    segment = await audiences.update_segment(
        session, context.clock, principal.team_id, segment_id, body
    )
    return segment_view(segment)


@router.delete("/segments/{segment_id}")
async def delete_segment(segment_id: str, principal: Writer, session: SessionDep) -> dict[str, Any]:
    await audiences.delete_segment(session, principal.team_id, segment_id)
    return {"object": "segment", "id": segment_id, "deleted": True}


@router.get("/segments/{segment_id}/contacts")
async def segment_contacts(
    segment_id: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    result = await audiences.segment_contacts(session, principal.team_id, segment_id, page)
    registry = await registered_properties(session, principal.team_id)
    return list_body(result, lambda contact: contact_view(contact, registry))


@router.post("/segments/{segment_id}/contacts/{contact_ref}")
@router.post("/contacts/{contact_ref}/segments/{segment_id}")
async def add_member(
    segment_id: str, contact_ref: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    segment, contact = await audiences.add_segment_member(
        session, context.clock, principal.team_id, segment_id, contact_ref
    )
    return membership_view(segment.id, contact.id)


@router.delete("/segments/{segment_id}/contacts/{contact_ref}")
@router.delete("/contacts/{contact_ref}/segments/{segment_id}")
async def remove_member(
    segment_id: str, contact_ref: str, principal: Writer, session: SessionDep
) -> dict[str, Any]:
    segment, contact = await audiences.remove_segment_member(
        session, principal.team_id, segment_id, contact_ref
    )
    # Resend's Node SDK types this answer `{id, audienceId, deleted}`: both spellings.
    return membership_view(
        segment.id, contact.id, audience_id=segment.audience_id,
        audienceId=segment.audience_id, deleted=True,
    )  # fmt: skip


@router.get("/contacts/{contact_ref}/segments")
async def contact_segments(
    contact_ref: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    result = await audiences.segments_of_contact(session, principal.team_id, contact_ref, page)
    return list_body(result, segment_view)
