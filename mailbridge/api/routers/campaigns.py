"""Campaigns (spec §2.4, §2.6, §3.1, §4.5, §4.6): drafts, sending, canceling, A/B results."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import campaigns
from mailbridge.services.campaigns import CampaignFields, SendCampaign

router = APIRouter(tags=["campaigns"])

Status = Literal["draft", "queued", "scheduled", "recurring", "sending", "sent", "canceled"]


@router.post("/campaigns", status_code=201)
async def create_campaign(
    body: CampaignFields, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    campaign = await campaigns.create_campaign(session, context.clock, principal.team_id, body)
    return {"object": "campaign", "id": campaign.id}


@router.get("/campaigns")
async def list_campaigns(
    principal: Reader, session: SessionDep, page: PageDep,
    parent_id: Annotated[str | None, Query(max_length=100)] = None,
    status: Annotated[Status | None, Query()] = None,
) -> dict[str, Any]:  # fmt: skip
    found = await campaigns.list_campaigns(
        session, principal.team_id, page, parent_id=parent_id, status=status
    )
    return list_body(found, campaigns.campaign_list_item)


@router.get("/campaigns/{campaign_id}")
async def get_campaign(campaign_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    return await campaigns.campaign_with_counts(session, principal.team_id, campaign_id)


@router.patch("/campaigns/{campaign_id}")
async def update_campaign(
    campaign_id: str, body: CampaignFields, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    campaign = await campaigns.update_campaign(
        session, context.clock, principal.team_id, campaign_id, body
    )
    return {"object": "campaign", "id": campaign.id}


@router.delete("/campaigns/{campaign_id}")
async def delete_campaign(
    campaign_id: str, principal: Writer, session: SessionDep
) -> dict[str, Any]:
    campaign = await campaigns.delete_campaign(session, principal.team_id, campaign_id)
    return {"object": "campaign", "id": campaign.id, "deleted": True}


@router.post("/campaigns/{campaign_id}/send")
async def send_campaign(
    campaign_id: str, principal: Writer, session: SessionDep, context: ContextDep,
    body: Annotated[SendCampaign | None, Body()] = None,
) -> dict[str, Any]:  # fmt: skip
    campaign = await campaigns.send_campaign(
        session, context, principal, campaign_id, body or SendCampaign()
    )
    return {"id": campaign.id}


@router.post("/campaigns/{campaign_id}/cancel")
async def cancel_campaign(
    campaign_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    campaign = await campaigns.cancel_campaign(session, context, principal.team_id, campaign_id)
    return {"object": "campaign", "id": campaign.id, "status": campaign.status}


@router.post("/campaigns/{campaign_id}/duplicate", status_code=201)
async def duplicate_campaign(
    campaign_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """A new draft with the campaign's content and recipients, named "<name> (copy)"."""
    campaign = await campaigns.duplicate_campaign(
        session, context.clock, principal.team_id, campaign_id
    )
    return campaigns.campaign_view(campaign)


@router.get("/campaigns/{campaign_id}/ab")
async def campaign_ab(campaign_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    return await campaigns.campaign_ab(session, principal.team_id, campaign_id)
