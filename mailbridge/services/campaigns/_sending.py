"""Sending and canceling a campaign (spec §3.1, §4.5).

``POST /campaigns/:id/send`` takes a draft only. It fixes the content (``_content``),
checks it as POST /emails would check one of its emails (sender's domain verified,
addresses, text), reads ``scheduled_at`` in ``schedule_timezone`` and charges the
quota, all before anything changes: a refusal leaves the draft as it was. Then:

- no ``scheduled_at``: ``queued``, the runner starts at once;
- a future one (at most 30 days): ``scheduled``, started then;
- a ``recurrence``: ``recurring``; the rule starts at ``scheduled_at`` (its DTSTART)
  or now, and each occurrence becomes a child campaign (``_fanout``).

The quota is charged for the recipients the campaign reaches at send (a scheduled one
too: a later send cannot take what it was promised); a recurring campaign's send only
checks that one occurrence fits, each occurrence is charged when it comes.

Canceling: a ``scheduled`` campaign never starts; a ``recurring`` one makes no more
occurrences (a child under way goes on; cancel it too to stop it); a ``queued`` or
``sending`` one stops making emails — recipients without one yet get none, emails
already made are delivered. Canceling anything else is a 422.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.services import accounts, polls
from mailbridge.services.accounts import Principal, QuotaLedger
from mailbridge.services.campaigns._calendar import (
    Recurrence,
    parse_campaign_time,
    timezone_named,
)
from mailbridge.services.campaigns._campaigns import get_campaign
from mailbridge.services.campaigns._content import Content, resolve_content
from mailbridge.services.campaigns._recipients import count_recipients
from mailbridge.services.campaigns._requests import SendCampaign
from mailbridge.services.email import SendEmailRequest, prepare_email
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Campaign

ACTIVE = ("queued", "sending")
CANCELABLE = ("scheduled", "recurring", *ACTIVE)


async def check_content(
    session: AsyncSession, context: ServiceContext, principal: Principal, content: Content
) -> None:
    """What POST /emails would say of one of the campaign's emails (to a stand-in), and
    that every poll it embeds still exists."""
    await polls.check_embedded_polls(
        session, principal.team_id, content.html, content.text, subjects=[content.subject]
    )
    sender_domain = content.from_address.rsplit("@", 1)[-1].rstrip(">").strip()
    body = SendEmailRequest.model_validate({
        "from": content.from_address, "to": [f"campaign-check@{sender_domain}"],
        "reply_to": content.reply_to, "subject": content.subject, "html": content.html,
        "text": content.text,
    })  # fmt: skip
    await prepare_email(session, context, principal, body, context.clock.now(), marketing=True)


def contents_of(campaign: Campaign, content: Content) -> dict[str, Content]:
    if not campaign.ab:
        return {"": content}
    a, b = campaign.ab["variants"]
    return {"A": content.with_variant(a), "B": content.with_variant(b)}


async def send_campaign(
    session: AsyncSession,
    context: ServiceContext,
    principal: Principal,
    campaign_id: str,
    body: SendCampaign,
) -> Campaign:
    now = context.clock.now()
    campaign = await get_campaign(session, principal.team_id, campaign_id)
    if campaign.status != "draft":
        raise ValidationError(
            f"The campaign is already {campaign.status}; only a draft can be sent."
        )
    if campaign.audience_id is None and campaign.segment_id is None:
        raise ValidationError("A campaign needs an `audience_id` or a `segment_id` to be sent.")
    contents = contents_of(campaign, await resolve_content(session, campaign))
    for content in contents.values():
        await check_content(session, context, principal, content)
    zone = timezone_named(body.schedule_timezone) if body.schedule_timezone else None
    scheduled_at = parse_campaign_time(body.scheduled_at, now, zone) if body.scheduled_at else None

    await accounts.lock_teams(session, [campaign.team_id])
    ledger = await QuotaLedger.load(session, now, [campaign.team_id])
    recipients = await count_recipients(session, campaign)
    if campaign.recurrence is not None:
        ledger.check(campaign.team_id, recipients)
        # The rule's DTSTART, in whole seconds as RRULEs count them.
        start = (scheduled_at or now).replace(microsecond=0)
        rule = Recurrence(campaign.recurrence, zone or timezone_named(None), start)
        first = rule.next_after(start - timedelta(microseconds=1))
        if first is None:
            raise ValidationError("The `recurrence` has no occurrence after its start.")
        campaign.status, campaign.phase, campaign.due_at = "recurring", "occur", first
        campaign.started_at = start
    else:
        ledger.charge(campaign.team_id, recipients)
        await ledger.store(session)
        if scheduled_at is not None:
            campaign.status, campaign.phase, campaign.due_at = "scheduled", "start", scheduled_at
        else:
            campaign.status, campaign.phase, campaign.due_at = "queued", "resolve", now
            campaign.started_at = now
    campaign.content = {arm: content.to_json() for arm, content in contents.items()}
    campaign.scheduled_at = scheduled_at
    campaign.schedule_timezone = body.schedule_timezone
    campaign.updated_at = now
    await session.commit()
    context.work_added("campaigns")
    return campaign


async def cancel_campaign(
    session: AsyncSession, context: ServiceContext, team_id: str, campaign_id: str
) -> Campaign:
    campaign = await get_campaign(session, team_id, campaign_id)
    if campaign.status not in CANCELABLE:
        raise ValidationError(
            f"A {campaign.status} campaign cannot be canceled; only a scheduled, recurring, "
            "queued or sending one can."
        )
    campaign.status = "canceled"
    campaign.phase = campaign.due_at = None
    campaign.updated_at = context.clock.now()
    await session.commit()
    return campaign
