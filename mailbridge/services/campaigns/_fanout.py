"""The runner's side of campaigns: one bounded step a transaction, rows first.

A campaign with a ``due_at`` is claimed with a lease (``claim_due_campaigns``);
:func:`advance_campaign` then takes one step of its ``phase`` and commits it with the
campaign's new phase and due time, so a runner killed at any instant leaves a campaign
that the next claim (after the lease) takes up exactly where the last commit left it:

- ``start``: a scheduled campaign's time has come: it starts resolving.
- ``occur``: a recurring campaign's occurrence has come: a child campaign for it (its
  id is the parent's and the occurrence's, so it is made once) and the next occurrence.
  After downtime only the latest missed occurrence is sent, once.
- ``resolve``: the next chunk of recipient rows (``_recipients``).
- ``emails``: the next chunk of due recipients becomes emails, stored with their rows
  marked in the same transaction — every recipient gets exactly one email. Daily
  batches wait for their day; an A/B test's rest waits for its winner.
- ``decide``: the A/B test's time is up: the winner, ``campaign.ab_decided``, and (when
  ``auto_send_winner``) the rest get the winner's content.

When every recipient that will get an email has one, the campaign is ``sent`` and
``campaign.sent`` is recorded.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ApiError
from mailbridge.services import polls
from mailbridge.services.accounts import Principal, QuotaLedger, lock_teams
from mailbridge.services.campaigns._ab import ab_result
from mailbridge.services.campaigns._calendar import Recurrence, batch_due, timezone_named
from mailbridge.services.campaigns._content import Content, stored_content
from mailbridge.services.campaigns._recipients import count_recipients, resolve_chunk
from mailbridge.services.campaigns._requests import decide_after_of
from mailbridge.services.email import SendEmailRequest, prepare_email, store_prepared_rows
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.storage.queries import locked
from mailbridge.storage.tables import Campaign, CampaignRecipient, Contact, Team
from mailbridge.storage.types import new_id

EMAIL_CHUNK = 500
RETRY_AFTER = timedelta(minutes=5)  # a step refused by a check that no longer holds
_CHILD_IDS = uuid.UUID("8a0c6d2e-5b7f-4f0e-9a51-3c2d9e7b1f40")


async def next_campaign_due_at(session: AsyncSession) -> datetime | None:
    query = select(Campaign.due_at).where(Campaign.due_at.is_not(None)).order_by(Campaign.due_at)
    return await session.scalar(query.limit(1))


async def claim_due_campaigns(
    session: AsyncSession, now: datetime, owner: str, limit: int, lease: timedelta
) -> list[str]:
    """Lease up to ``limit`` due campaigns (not leased by a live runner); their ids."""
    query = (
        select(Campaign.id)
        .where(
            Campaign.due_at <= now,
            or_(Campaign.lease_until.is_(None), Campaign.lease_until < now),
        )
        .order_by(Campaign.due_at)
        .limit(limit)
    )
    ids = list((await session.scalars(locked(query, session, skip_locked=True))).all())
    if ids:
        await session.execute(
            update(Campaign)
            .where(Campaign.id.in_(ids))
            .values(lease_owner=owner, lease_until=now + lease)
            .execution_options(synchronize_session=False)
        )
    await session.commit()
    return ids


async def release_campaigns(session: AsyncSession, owner: str) -> None:
    await session.execute(
        update(Campaign)
        .where(Campaign.lease_owner == owner)
        .values(lease_owner=None, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    await session.commit()


async def advance_campaign(context: ServiceContext, campaign_id: str, owner: str) -> bool:
    """One step of a leased campaign; True when its next step is due at once."""
    now = context.clock.now()
    async with context.database.session() as session:
        query = select(Campaign).where(Campaign.id == campaign_id)
        if not context.database.is_sqlite:
            query = query.with_for_update()
        campaign = await session.scalar(query)
        if campaign is None or campaign.lease_owner != owner:
            return False  # deleted, or the lease ran out and another runner has it
        created = 0
        step = _STEPS.get(campaign.phase or "")
        if step is None:
            campaign.due_at = None  # nothing left to do
        elif campaign.due_at is not None and campaign.due_at <= now:
            try:
                created = await step(session, context, campaign, now)
            except ApiError as refusal:
                # What the send checked no longer holds (the domain stopped being
                # verified, the template was deleted): nothing of this step is kept,
                # and it is tried again later, the reason on the record.
                await session.rollback()
                await _postpone(context, campaign_id, owner, refusal.message, now)
                return False
            campaign.last_error = None
        again = campaign.due_at is not None and campaign.due_at <= now
        if again:
            campaign.lease_until = now + timedelta(seconds=context.settings.campaign_lease_seconds)
        else:
            campaign.lease_owner = campaign.lease_until = None
        campaign.updated_at = now
        await session.commit()
    if created:
        context.work_added("delivery", "activity")
    return again


async def _postpone(
    context: ServiceContext, campaign_id: str, owner: str, reason: str, now: datetime
) -> None:
    waiting = {
        "last_error": f"Waiting: {reason}", "due_at": now + RETRY_AFTER, "lease_owner": None,
        "lease_until": None, "updated_at": now,
    }  # fmt: skip
    async with context.database.session() as session:
        await session.execute(
            update(Campaign)
            .where(Campaign.id == campaign_id, Campaign.lease_owner == owner)
            .values(**waiting)
            .execution_options(synchronize_session=False)
        )
        await session.commit()


# --- the steps --------------------------------------------------------------------------


async def _start(
    session: AsyncSession, context: ServiceContext, campaign: Campaign, now: datetime
) -> int:
    campaign.status, campaign.phase, campaign.started_at = "sending", "resolve", now
    return await _resolve(session, context, campaign, now)


async def _resolve(
    session: AsyncSession, context: ServiceContext, campaign: Campaign, now: datetime
) -> int:
    campaign.status = "sending"
    if await resolve_chunk(session, campaign, context.settings.allow_reserved_recipients):
        campaign.phase = "emails"
        campaign.started_at = campaign.started_at or now
    campaign.due_at = now
    return 0


async def _zone(session: AsyncSession, campaign: Campaign) -> ZoneInfo:
    if campaign.schedule_timezone:
        return timezone_named(campaign.schedule_timezone)
    name = await session.scalar(select(Team.timezone).where(Team.id == campaign.team_id))
    return timezone_named(name or "UTC")


def _day(started: datetime, zone: ZoneInfo, now: datetime) -> int:
    """The daily batch due now: how many local midnights have passed since ``started``."""
    day = 0
    while batch_due(started, zone, day + 1) <= now:
        day += 1
    return day


async def _emails(
    session: AsyncSession, context: ServiceContext, campaign: Campaign, now: datetime
) -> int:
    contents = stored_content(campaign)
    started = campaign.started_at or now
    zone = await _zone(session, campaign)
    day = _day(started, zone, now) if campaign.batch_size_per_day else 0
    arms: list[str | None] = ["A", "B"] if campaign.ab else [None]
    if campaign.ab and "" in contents:  # the winner is known and goes to the rest
        arms.append(None)
    pending = and_(
        CampaignRecipient.campaign_id == campaign.id,
        CampaignRecipient.email_id.is_(None),
    )
    arm_condition = or_(
        CampaignRecipient.variant.in_([arm for arm in arms if arm is not None]),
        CampaignRecipient.variant.is_(None) if None in arms else CampaignRecipient.variant.in_([]),
    )
    rows = (
        await session.execute(
            select(
                CampaignRecipient.contact_id, CampaignRecipient.email, CampaignRecipient.variant,
                Contact.first_name, Contact.last_name, Contact.properties,
            )
            .outerjoin(Contact, Contact.id == CampaignRecipient.contact_id)
            .where(pending, CampaignRecipient.batch <= day, arm_condition)
            .order_by(CampaignRecipient.position)
            .limit(EMAIL_CHUNK)
        )
    ).all()  # fmt: skip
    if rows:
        await _make_emails(session, context, campaign, contents, rows, now)
    if len(rows) == EMAIL_CHUNK:
        campaign.due_at = now
        return len(rows)
    later = await session.scalar(
        select(exists().where(pending, CampaignRecipient.batch > day, arm_condition))
    )
    if later:
        campaign.due_at = batch_due(started, zone, day + 1)
    elif campaign.ab and campaign.ab_decided_at is None:
        campaign.phase = "decide"
        campaign.due_at = max(now, started + decide_after_of(campaign.ab.get("decide_after", "4h")))
    else:
        _finish(session, context, campaign, now)
    return len(rows)


async def _make_emails(
    session: AsyncSession,
    context: ServiceContext,
    campaign: Campaign,
    contents: dict[str, Content],
    recipients: Any,
    now: datetime,
) -> None:
    bases: dict[str, dict[str, Any]] = {}
    emails: list[dict[str, Any]] = []
    marked: list[dict[str, Any]] = []
    # Checked at send; a poll deleted since then renders as nothing.
    links = await polls.poll_links(
        session, context, campaign.team_id,
        [text for content in contents.values() for text in (content.html, content.text)],
        strict=False, writing=True,
    )  # fmt: skip
    for contact_id, address, variant, first_name, last_name, properties in recipients:
        arm = variant or ""
        content = contents[arm]
        base = bases.get(arm)
        if base is None:
            base = bases[arm] = await _base_row(session, context, campaign, content, now)
        contact = {
            "id": contact_id, "email": address, "first_name": first_name,
            "last_name": last_name, "properties": properties or {},
        }  # fmt: skip
        subject, html, text = content.personalized(contact, links)
        email_id = new_id()
        domain = str(base["message_id"]).rsplit("@", 1)[-1]
        emails.append({
            **base, "id": email_id, "to": [address], "delivery_recipients": [address],
            "recipients_text": f"\n{address}\n", "subject": subject, "html": html,
            "text": text, "contact_id": contact_id, "message_id": f"<{email_id}@{domain}",
        })  # fmt: skip
        marked.append({"campaign_id": campaign.id, "contact_id": contact_id, "email_id": email_id})
    await store_prepared_rows(session, now, emails)
    await session.execute(update(CampaignRecipient), marked)  # by primary key


async def _base_row(
    session: AsyncSession, context: ServiceContext, campaign: Campaign, content: Content,
    now: datetime,
) -> dict[str, Any]:  # fmt: skip
    """The row every email of one arm starts from: checked as POST /emails checks it."""
    domain = content.from_address.rsplit("@", 1)[-1].rstrip(">").strip()
    body = SendEmailRequest.model_validate({
        "from": content.from_address, "to": [f"campaign@{domain}"], "reply_to": content.reply_to,
        "subject": content.subject, "html": content.html, "text": content.text,
        "tags": [{"name": "campaign_id", "value": campaign.id}],
    })  # fmt: skip
    prepared = await prepare_email(
        session, context, Principal(team_id=campaign.team_id, plan=""), body, now, marketing=True
    )
    row = dict(prepared.row)
    row.update(campaign_id=campaign.id, template_id=content.template_id,
               template_version_id=content.template_version_id)  # fmt: skip
    return row


async def _decide(
    session: AsyncSession, context: ServiceContext, campaign: Campaign, now: datetime
) -> int:
    result = await ab_result(session, campaign)
    campaign.ab_winner = result.winner
    campaign.ab_decided_at = now
    record_event(session, context.clock, campaign.team_id, "campaign.ab_decided",
                 result.as_json(campaign.id))  # fmt: skip
    assert campaign.ab is not None
    if campaign.ab.get("auto_send_winner", True):
        contents = dict(campaign.content or {})
        contents[""] = contents[result.winner]
        campaign.content = contents
        campaign.phase, campaign.due_at = "emails", now
    else:
        _finish(session, context, campaign, now)
    return 0


def _finish(
    session: AsyncSession, context: ServiceContext, campaign: Campaign, now: datetime
) -> None:
    campaign.status, campaign.phase, campaign.due_at, campaign.sent_at = "sent", None, None, now
    record_event(session, context.clock, campaign.team_id, "campaign.sent", {
        "id": campaign.id, "name": campaign.name, "parent_id": campaign.parent_id,
        "recipients": campaign.recipients,
    })  # fmt: skip


async def _occur(
    session: AsyncSession, context: ServiceContext, parent: Campaign, now: datetime
) -> int:
    zone = timezone_named(parent.schedule_timezone)
    assert parent.recurrence is not None and parent.started_at is not None
    rule = Recurrence(parent.recurrence, zone, parent.started_at)
    since = parent.last_occurrence_at or parent.started_at - timedelta(microseconds=1)
    occurrence = rule.latest_at_or_before(now, after=since)
    if occurrence is not None:
        child_id = str(uuid.uuid5(_CHILD_IDS, f"{parent.id}:{occurrence.isoformat()}"))
        if await session.get(Campaign, child_id) is None:
            session.add(await _child(session, parent, child_id, occurrence, now))
        parent.last_occurrence_at = occurrence
    parent.due_at = rule.next_after(now)
    if parent.due_at is None:
        parent.status, parent.phase, parent.sent_at = "sent", None, now
    return 0


async def _child(
    session: AsyncSession, parent: Campaign, child_id: str, occurrence: datetime, now: datetime
) -> Campaign:
    child = Campaign(
        id=child_id, team_id=parent.team_id, name=parent.name, from_address=parent.from_address,
        subject=parent.subject, html=parent.html, text=parent.text,
        template_id=parent.template_id, variables=parent.variables, reply_to=parent.reply_to,
        preview_text=parent.preview_text, audience_id=parent.audience_id,
        segment_id=parent.segment_id, topic_id=parent.topic_id,
        batch_size_per_day=parent.batch_size_per_day, ab=parent.ab, content=parent.content,
        status="sending", schedule_timezone=parent.schedule_timezone, parent_id=parent.id,
        occurrence_at=occurrence, phase="resolve", due_at=now, started_at=now, recipients=0,
        created_at=now, updated_at=now,
    )  # fmt: skip
    await lock_teams(session, [parent.team_id])
    ledger = await QuotaLedger.load(session, now, [parent.team_id])
    try:
        ledger.charge(parent.team_id, await count_recipients(session, child))
    except ApiError as refusal:
        child.status, child.phase, child.due_at = "canceled", None, None
        child.last_error = f"Not sent: {refusal.message}"
        return child
    await ledger.store(session)
    return child


_STEPS = {
    "start": _start,
    "resolve": _resolve,
    "emails": _emails,
    "decide": _decide,
    "occur": _occur,
}
