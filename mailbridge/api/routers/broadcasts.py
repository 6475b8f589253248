"""Broadcasts: Resend's name and shapes for campaigns, served by the campaigns service.

Every route calls the same ``services.campaigns`` code as ``/campaigns``; only the
bodies differ. Create, update and send answer ``{id}``; remove answers
``{object: "broadcast", id, deleted: true}``; a broadcast shows Resend's fields.

Statuses, ours → Resend's:

- ``draft``, ``scheduled``, ``queued``, ``sent``, ``canceled``: the same (Resend's own
  cancel turns a scheduled broadcast back into a draft; ours cancels it for good);
- ``recurring`` → ``scheduled``: more occurrences are planned, none is under way;
- ``sending`` → ``queued``: Resend's ``queued`` covers a broadcast going out.

As in Resend: ``audience_id`` may name a segment (the SDK's ``Audiences`` are segments):
it is read as ``segment_id`` when none is given; ``send: true`` on create sends at once
(or at ``scheduled_at``), and a refused send leaves nothing behind; removing a
scheduled broadcast cancels it first. Only a draft can be updated (422 otherwise).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from pydantic.config import JsonDict
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import audiences, campaigns
from mailbridge.services.accounts import Principal
from mailbridge.services.campaigns import CampaignFields, SendCampaign
from mailbridge.services.kernel import ServiceContext
from mailbridge.wire import LINE_PATTERN, read_by_name

router = APIRouter(tags=["broadcasts"])

STATUSES = {"recurring": "scheduled", "sending": "queued"}
LISTED = (
    "id", "name", "audience_id", "segment_id", "topic_id", "status", "created_at",
    "scheduled_at", "sent_at",
)  # fmt: skip
SHOWN = (
    "object", "id", "name", "audience_id", "segment_id", "topic_id", "from", "subject",
    "reply_to", "preview_text", "html", "text", "status", "created_at", "scheduled_at",
    "sent_at",
)  # fmt: skip


# ``scheduled_at`` is read (as POST /broadcasts/:id/send reads it: one line) only with
# ``send: true``.
SEND_NOW_OR_AT: JsonDict = {
    "if": {"required": ["send"], "properties": {"send": {"const": True}}},
    "then": {
        "properties": {
            "scheduled_at": {
                "anyOf": [{"type": "string", "pattern": LINE_PATTERN}, {"type": "null"}]
            }
        }
    },
}


def _create_schema(schema: JsonDict, model: type[BaseModel]) -> None:
    read_by_name(schema, model)
    before = schema.get("allOf")
    schema["allOf"] = [*(before if isinstance(before, list) else []), SEND_NOW_OR_AT]


class CreateBroadcast(CampaignFields):
    model_config = ConfigDict(json_schema_extra=_create_schema)

    send: StrictBool = False
    scheduled_at: str | None = Field(default=None, max_length=200)


def resend_view(view: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """A campaign's view in Resend's words."""
    shown = {name: view.get(name) for name in fields}
    shown["status"] = STATUSES.get(view["status"], view["status"])
    if "object" in shown:
        shown["object"] = "broadcast"
    if "reply_to" in shown:
        shown["reply_to"] = shown["reply_to"] or None
    return shown


async def _addressed(session: AsyncSession, team_id: str, fields: CampaignFields) -> CampaignFields:
    """``fields`` with an ``audience_id`` that names a segment read as Resend reads it."""
    if fields.audience_id is None:
        return fields
    scope = await audiences.audience_scope(session, team_id, fields.audience_id)
    if scope.segment is None:
        return fields
    segment_id = fields.segment_id or scope.segment.id
    return fields.model_copy(update={"audience_id": scope.audience.id, "segment_id": segment_id})


async def _send_new(
    session: AsyncSession, context: ServiceContext, principal: Principal, campaign_id: str,
    scheduled_at: str | None,
) -> None:  # fmt: skip
    """Send a broadcast just created, removing it if the send is refused."""
    try:
        await campaigns.send_campaign(
            session, context, principal, campaign_id, SendCampaign(scheduled_at=scheduled_at)
        )
    except Exception:
        await session.rollback()
        await campaigns.delete_campaign(session, principal.team_id, campaign_id)
        raise


@router.post("/broadcasts", status_code=201)
async def create_broadcast(
    body: CreateBroadcast, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    fields = await _addressed(session, principal.team_id, body)
    campaign = await campaigns.create_campaign(session, context.clock, principal.team_id, fields)
    campaign_id = campaign.id  # a refused send rolls back, which expires the row
    if body.send:
        await _send_new(session, context, principal, campaign_id, body.scheduled_at)
    return {"id": campaign_id}


@router.get("/broadcasts")
async def list_broadcasts(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    found = await campaigns.list_campaigns(session, principal.team_id, page)
    return list_body(found, lambda item: resend_view(campaigns.campaign_list_item(item), LISTED))


@router.get("/broadcasts/{broadcast_id}")
async def get_broadcast(
    broadcast_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    campaign = await campaigns.get_campaign(session, principal.team_id, broadcast_id)
    return resend_view(campaigns.campaign_view(campaign), SHOWN)


@router.patch("/broadcasts/{broadcast_id}")
async def update_broadcast(
    broadcast_id: str, body: CampaignFields, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    fields = await _addressed(session, principal.team_id, body)
    campaign = await campaigns.update_campaign(
        session, context.clock, principal.team_id, broadcast_id, fields
    )
    return {"id": campaign.id}


@router.delete("/broadcasts/{broadcast_id}")
async def remove_broadcast(
    broadcast_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    campaign = await campaigns.get_campaign(session, principal.team_id, broadcast_id)
    if campaign.status in ("scheduled", "recurring"):
        await campaigns.cancel_campaign(session, context, principal.team_id, broadcast_id)
    await campaigns.delete_campaign(session, principal.team_id, broadcast_id)
    return {"object": "broadcast", "id": broadcast_id, "deleted": True}


@router.post("/broadcasts/{broadcast_id}/send")
async def send_broadcast(
    broadcast_id: str, principal: Writer, session: SessionDep, context: ContextDep,
    body: Annotated[SendCampaign | None, Body()] = None,
) -> dict[str, Any]:  # fmt: skip
    campaign = await campaigns.send_campaign(
        session, context, principal, broadcast_id, body or SendCampaign()
    )
    return {"id": campaign.id}


@router.post("/broadcasts/{broadcast_id}/cancel")
async def cancel_broadcast(
    broadcast_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    campaign = await campaigns.cancel_campaign(session, context, principal.team_id, broadcast_id)
    return {"object": "broadcast", "id": campaign.id}


@router.post("/broadcasts/{broadcast_id}/duplicate", status_code=201)
async def duplicate_broadcast(
    broadcast_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """A new draft with the broadcast's content and recipients (Resend's `duplicate`)."""
    campaign = await campaigns.duplicate_campaign(
        session, context.clock, principal.team_id, broadcast_id
    )
    return {"object": "broadcast", "id": campaign.id}


@router.get("/broadcasts/{broadcast_id}/recipients")
async def broadcast_recipients(
    broadcast_id: str, principal: Reader, session: SessionDep, page: PageDep,
    type: Annotated[str, Query(json_schema_extra={"enum": list(campaigns.RECIPIENT_EVENTS)})],
    email: Annotated[str | None, Query(max_length=320)] = None,
    bounce_type: Annotated[
        str | None, Query(json_schema_extra={"enum": list(campaigns.BOUNCE_TYPES)})
    ] = None,
) -> dict[str, Any]:  # fmt: skip
    """The recipients that reached an event (`type`), newest first, each with a count."""
    campaign = await campaigns.get_campaign(session, principal.team_id, broadcast_id)
    found = await campaigns.campaign_recipients(
        session, campaign, type, page, address=email, bounce_type=bounce_type
    )
    return list_body(found, campaigns.recipient_view)


@router.get("/broadcasts/{broadcast_id}/clicked-links")
async def broadcast_clicked_links(
    broadcast_id: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    """The links clicked in the broadcast's emails, most clicked first."""
    campaign = await campaigns.get_campaign(session, principal.team_id, broadcast_id)
    return list_body(
        await campaigns.clicked_links(session, campaign, page), campaigns.clicked_link_view
    )
