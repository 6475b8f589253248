"""A campaign's A/B result (spec §2.4, §4.6), from its recipients and their engagement.

An arm's ``sent`` counts its recipients that have an email; its conversions, those
recipients' first engagement of the metric's kind with this campaign (``opened``,
``clicked``; a click counts as an open). Replies count once inbound mail records them
(issue 4 of 7); until then the ``reply`` metric converts nobody. The statistics are
``_ab_test.decide``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.services.campaigns._ab_test import AbResult, Arm, decide
from mailbridge.services.campaigns._campaigns import get_campaign
from mailbridge.storage.tables import Campaign, CampaignRecipient, ContactEngagement

ENGAGEMENT_OF = {"open": "opened", "click": "clicked", "reply": "replied"}


async def ab_result(session: AsyncSession, campaign: Campaign) -> AbResult:
    ab = campaign.ab
    if not ab:
        raise ValidationError("This campaign has no A/B test.")
    metric = str(ab["metric"])
    emailed = and_(
        CampaignRecipient.campaign_id == campaign.id,
        CampaignRecipient.variant.is_not(None),
        CampaignRecipient.email_id.is_not(None),
    )
    by_variant = select(CampaignRecipient.variant, func.count()).where(emailed)
    sent = await _counts(session, by_variant)
    conversions: dict[str | None, int] = {}
    kind = ENGAGEMENT_OF.get(metric)
    if kind is not None:
        engaged = and_(
            ContactEngagement.contact_id == CampaignRecipient.contact_id,
            ContactEngagement.campaign_id == campaign.id,
            ContactEngagement.kind == kind,
        )
        conversions = await _counts(session, by_variant.join(ContactEngagement, engaged))
    arms = [
        Arm(variant, int(sent.get(variant, 0)), int(conversions.get(variant, 0)))
        for variant in ("A", "B")
    ]
    return decide(arms[0], arms[1], metric)


async def _counts(
    session: AsyncSession, query: Select[tuple[str | None, int]]
) -> dict[str | None, int]:
    rows = await session.execute(query.group_by(CampaignRecipient.variant))
    return {variant: int(count) for variant, count in rows.tuples()}


async def campaign_ab(session: AsyncSession, team_id: str, campaign_id: str) -> dict[str, Any]:
    """GET /campaigns/:id/ab: 404 when not the team's, 422 without an A/B test."""
    campaign = await get_campaign(session, team_id, campaign_id)
    return (await ab_result(session, campaign)).as_json(campaign.id)
