"""Campaign records: create, read, list, change while a draft, delete; their counts.

A campaign is created as a ``draft`` and may be changed only while it is one; it may
be deleted as a draft or once finished (``sent``, ``canceled``), or a recurring one
once canceled. Counts are read from what its emails did: ``sent``, ``delivered``,
``bounced``, ``complained`` from their events, ``opened``, ``clicked`` and
``unsubscribed`` from the contacts' first engagement with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.services import audiences, polls, templates
from mailbridge.services.campaigns._calendar import validate_recurrence
from mailbridge.services.campaigns._requests import CampaignFields
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned, is_uuid
from mailbridge.storage.tables import (
    Campaign,
    CampaignRecipient,
    ContactEngagement,
    Email,
    EmailEvent,
)

EVENT_COUNTS = ("sent", "delivered", "bounced", "complained")
ENGAGEMENT_COUNTS = ("opened", "clicked", "unsubscribed")
FINISHED = ("sent", "canceled")
COLUMNS = {
    "name": "name", "from_": "from_address", "subject": "subject", "html": "html",
    "text": "text", "template_id": "template_id", "variables": "variables",
    "reply_to": "reply_to", "preview_text": "preview_text", "audience_id": "audience_id",
    "segment_id": "segment_id", "topic_id": "topic_id", "recurrence": "recurrence",
    "batch_size_per_day": "batch_size_per_day", "ab": "ab",
}  # fmt: skip


def campaign_view(campaign: Campaign, counts: dict[str, int] | None = None) -> dict[str, Any]:
    ab = campaign.ab
    return {
        "object": "campaign",
        "id": campaign.id,
        "name": campaign.name,
        "from": campaign.from_address,
        "subject": campaign.subject,
        "html": campaign.html,
        "text": campaign.text,
        "template_id": campaign.template_id,
        "variables": campaign.variables or {},
        "reply_to": campaign.reply_to or [],
        "preview_text": campaign.preview_text,
        "audience_id": campaign.audience_id,
        "segment_id": campaign.segment_id,
        "topic_id": campaign.topic_id,
        "recurrence": campaign.recurrence,
        "batch_size_per_day": campaign.batch_size_per_day,
        "ab": ab,
        "ab_metric": ab["metric"] if ab else None,
        "ab_winner": campaign.ab_winner,
        "status": campaign.status,
        "scheduled_at": isoformat_ms(campaign.scheduled_at),
        "schedule_timezone": campaign.schedule_timezone,
        "parent_id": campaign.parent_id,
        "occurrence_at": isoformat_ms(campaign.occurrence_at),
        "next_occurrence_at": isoformat_ms(campaign.due_at)
        if campaign.status == "recurring"
        else None,
        "error": campaign.last_error,
        "counts": {"recipients": campaign.recipients, **(counts or _no_counts())},
        "created_at": isoformat_ms(campaign.created_at),
        "updated_at": isoformat_ms(campaign.updated_at),
        "sent_at": isoformat_ms(campaign.sent_at),
    }


def campaign_list_item(campaign: Campaign) -> dict[str, Any]:
    view = campaign_view(campaign)
    for heavy in ("html", "text", "variables", "counts"):
        view.pop(heavy)
    return view


def _no_counts() -> dict[str, int]:
    return dict.fromkeys((*EVENT_COUNTS, *ENGAGEMENT_COUNTS), 0)


async def campaign_counts(
    session: AsyncSession, campaign_ids: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Each campaign's counts (emails that reached each event, contacts that engaged)."""
    counts = {campaign_id: _no_counts() for campaign_id in campaign_ids}
    if not counts:
        return counts
    events = await session.execute(
        select(Email.campaign_id, EmailEvent.type, func.count(func.distinct(EmailEvent.email_id)))
        .join(Email, Email.id == EmailEvent.email_id)
        .where(Email.campaign_id.in_(list(counts)), EmailEvent.type.in_(EVENT_COUNTS))
        .group_by(Email.campaign_id, EmailEvent.type)
    )
    engagements = await session.execute(
        select(ContactEngagement.campaign_id, ContactEngagement.kind, func.count())
        .where(
            ContactEngagement.campaign_id.in_(list(counts)),
            ContactEngagement.kind.in_(ENGAGEMENT_COUNTS),
        )
        .group_by(ContactEngagement.campaign_id, ContactEngagement.kind)
    )
    for result in (events, engagements):
        for campaign_id, kind, count in result.tuples():
            counts[str(campaign_id)][str(kind)] = int(count)
    return counts


async def get_campaign(session: AsyncSession, team_id: str, campaign_id: str) -> Campaign:
    return await get_owned(session, Campaign, team_id, campaign_id, "Campaign")


async def campaign_with_counts(
    session: AsyncSession, team_id: str, campaign_id: str
) -> dict[str, Any]:
    campaign = await get_campaign(session, team_id, campaign_id)
    counts = await campaign_counts(session, [campaign.id])
    return campaign_view(campaign, counts[campaign.id])


async def list_campaigns(
    session: AsyncSession,
    team_id: str,
    page: PageRequest,
    *,
    parent_id: str | None = None,
    status: str | None = None,
) -> Page[Campaign]:
    query = select(Campaign).where(Campaign.team_id == team_id)
    if parent_id is not None:
        if not is_uuid(parent_id):
            raise ValidationError("`parent_id` must be a campaign id.")
        query = query.where(Campaign.parent_id == parent_id)
    if status is not None:
        query = query.where(Campaign.status == status)
    return await paginate(session, query, Campaign, page)


async def _check_references(session: AsyncSession, team_id: str, campaign: Campaign) -> None:
    if campaign.audience_id is not None or campaign.segment_id is not None:
        campaign.audience_id = await audiences.check_recipients(
            session, team_id, campaign.audience_id, campaign.segment_id, campaign.topic_id
        )
    elif campaign.topic_id is not None:
        await audiences.get_topic(session, team_id, campaign.topic_id)
    if campaign.template_id is not None:
        template = await templates.published_template(session, team_id, campaign.template_id)
        campaign.template_id = template.template_id
    if campaign.recurrence is not None:
        campaign.recurrence = validate_recurrence(campaign.recurrence)
    variants = (campaign.ab or {}).get("variants") or []
    await polls.check_embedded_polls(
        session, team_id, campaign.html, campaign.text,
        *(variant.get(part) for variant in variants for part in ("html", "text")),
        subjects=[campaign.subject, *(variant.get("subject") for variant in variants)],
    )  # fmt: skip


def _apply(campaign: Campaign, fields: CampaignFields, given: set[str]) -> None:
    for name in given & set(COLUMNS):
        value = getattr(fields, name)
        if name == "ab":
            value = fields.ab.model_dump(by_alias=True, exclude_none=True) if fields.ab else None
        elif name == "variables":
            value = value or {}
        elif name == "reply_to":
            value = value or []
        setattr(campaign, COLUMNS[name], value)


async def create_campaign(
    session: AsyncSession, clock: Clock, team_id: str, fields: CampaignFields
) -> Campaign:
    now = clock.now()
    campaign = Campaign(
        team_id=team_id, status="draft", variables={}, reply_to=[], recipients=0,
        created_at=now, updated_at=now,
    )  # fmt: skip
    _apply(campaign, fields, fields.model_fields_set)
    await _check_references(session, team_id, campaign)
    session.add(campaign)
    await session.commit()
    return campaign


async def update_campaign(
    session: AsyncSession, clock: Clock, team_id: str, campaign_id: str, fields: CampaignFields
) -> Campaign:
    campaign = await get_campaign(session, team_id, campaign_id)
    if campaign.status != "draft":
        raise ValidationError(
            f"Only a draft campaign can be changed; this one is {campaign.status}."
        )
    _apply(campaign, fields, fields.model_fields_set)
    await _check_references(session, team_id, campaign)
    campaign.updated_at = clock.now()
    await session.commit()
    return campaign


COPY_SUFFIX = " (copy)"
MAX_NAME_LENGTH = 200  # the column's, as CampaignFields takes it
_AUTHORED = (
    "from_address", "subject", "html", "text", "template_id", "variables", "reply_to",
    "preview_text", "audience_id", "segment_id", "topic_id", "recurrence",
    "batch_size_per_day", "ab",
)  # fmt: skip


async def duplicate_campaign(
    session: AsyncSession, clock: Clock, team_id: str, campaign_id: str
) -> Campaign:
    """A new draft with what the campaign was authored with (any status), named
    "<name> (copy)"; its references are checked again, as a create checks them."""
    source = await get_campaign(session, team_id, campaign_id)
    now = clock.now()
    copy = Campaign(
        team_id=team_id, status="draft", recipients=0, created_at=now, updated_at=now,
        **{name: getattr(source, name) for name in _AUTHORED},
    )  # fmt: skip
    if source.name is not None:
        copy.name = source.name[: MAX_NAME_LENGTH - len(COPY_SUFFIX)] + COPY_SUFFIX
    await _check_references(session, team_id, copy)
    session.add(copy)
    await session.commit()
    return copy


async def delete_campaign(session: AsyncSession, team_id: str, campaign_id: str) -> Campaign:
    campaign = await get_campaign(session, team_id, campaign_id)
    if campaign.status not in ("draft", *FINISHED):
        raise ValidationError(
            f"A {campaign.status} campaign cannot be deleted; cancel it first."
            if campaign.status in ("scheduled", "recurring")
            else f"A {campaign.status} campaign cannot be deleted until it is sent."
        )
    await session.execute(
        delete(CampaignRecipient).where(CampaignRecipient.campaign_id == campaign.id)
    )
    await session.delete(campaign)
    await session.commit()
    return campaign
