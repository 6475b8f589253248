"""Campaigns: marketing sends to an audience — scheduled, recurring, batched by day, A/B-tested.

Owns ``campaigns`` and ``campaign_recipients``: the records and their counts
(``_campaigns``), what a campaign sends (``_content``), sending and canceling
(``_sending``), who it reaches (``_recipients``), when (``_calendar``: schedules,
RRULE recurrences, daily batches), the A/B statistics (``_ab_test``, ``_ab``), who
reached which event and the links clicked (``_engagement``) and the runner's steps that
turn a campaign into emails (``_fanout``), which the email context then delivers like
any other.
"""

from __future__ import annotations

from mailbridge.services.campaigns._ab import campaign_ab
from mailbridge.services.campaigns._campaigns import (
    campaign_list_item,
    campaign_view,
    campaign_with_counts,
    create_campaign,
    delete_campaign,
    duplicate_campaign,
    get_campaign,
    list_campaigns,
    update_campaign,
)
from mailbridge.services.campaigns._engagement import (
    BOUNCE_TYPES,
    RECIPIENT_EVENTS,
    campaign_recipients,
    clicked_link_view,
    clicked_links,
    recipient_view,
)
from mailbridge.services.campaigns._fanout import (
    advance_campaign,
    claim_due_campaigns,
    next_campaign_due_at,
    release_campaigns,
)
from mailbridge.services.campaigns._requests import CampaignFields, SendCampaign
from mailbridge.services.campaigns._sending import cancel_campaign, send_campaign

__all__ = [
    "BOUNCE_TYPES",
    "RECIPIENT_EVENTS",
    "CampaignFields",
    "SendCampaign",
    "advance_campaign",
    "campaign_ab",
    "campaign_list_item",
    "campaign_recipients",
    "campaign_view",
    "campaign_with_counts",
    "cancel_campaign",
    "claim_due_campaigns",
    "clicked_link_view",
    "clicked_links",
    "create_campaign",
    "delete_campaign",
    "duplicate_campaign",
    "get_campaign",
    "list_campaigns",
    "next_campaign_due_at",
    "recipient_view",
    "release_campaigns",
    "send_campaign",
    "update_campaign",
]
