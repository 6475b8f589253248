"""A campaign's recipients: resolved in SQL once, written as rows in chunks, then emailed.

Resolving walks the audience's contacts in id order, a chunk a transaction: the
campaign's ``resolved_after`` moves with the rows it wrote, so a runner killed between
chunks goes on where the last commit left it, and the (campaign, contact) key makes
a repeated chunk impossible. The audience's condition (segment, topic, unsubscribed:
``audiences.recipients_condition``) is joined with the team's suppression list here;
addresses on reserved domains never get a campaign email.

Each row gets its A/B arm (``variant_of``: a hash of campaign and contact) and, with
``batch_size_per_day``, its day (its position over the batch size).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, exists, func, insert, not_, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.mail.addresses import is_reserved
from mailbridge.services import audiences
from mailbridge.services.campaigns._ab_test import variant_of
from mailbridge.storage.queries import table_of
from mailbridge.storage.tables import Campaign, CampaignRecipient, Contact, Suppression

RESOLVE_CHUNK = 2000


async def _condition(session: AsyncSession, campaign: Campaign) -> Any:
    reached = await audiences.recipients_condition(
        session, campaign.team_id, campaign.audience_id, campaign.segment_id, campaign.topic_id
    )
    listed = exists().where(
        Suppression.team_id == campaign.team_id, Suppression.email == Contact.email
    )
    return and_(reached, not_(listed))


async def count_recipients(session: AsyncSession, campaign: Campaign) -> int:
    """How many contacts the campaign would reach now (the quota check at send)."""
    query = select(func.count()).select_from(Contact).where(await _condition(session, campaign))
    return int(await session.scalar(query) or 0)


async def resolve_chunk(
    session: AsyncSession, campaign: Campaign, allow_reserved: bool = False
) -> bool:
    """Write the next chunk of recipient rows; True when every recipient is written.
    Contacts on reserved names are left out unless ``allow_reserved`` (a test setup)."""
    query = (
        select(Contact.id, Contact.email)
        .where(await _condition(session, campaign))
        .order_by(Contact.id)
        .limit(RESOLVE_CHUNK)
    )
    if campaign.resolved_after is not None:
        query = query.where(Contact.id > campaign.resolved_after)
    found = (await session.execute(query)).all()
    ab = campaign.ab
    fraction = float(ab.get("test_fraction", 0.2)) if ab else 0.0
    per_day = campaign.batch_size_per_day
    rows: list[dict[str, Any]] = []
    position = campaign.recipients
    for contact_id, address in found:
        if is_reserved(address) and not allow_reserved:
            continue
        rows.append({
            "campaign_id": campaign.id, "contact_id": contact_id, "team_id": campaign.team_id,
            "email": address, "position": position,
            "batch": position // per_day if per_day else 0,
            "variant": variant_of(campaign.id, contact_id, fraction) if ab else None,
            "email_id": None,
        })  # fmt: skip
        position += 1
    if rows:
        await session.execute(insert(table_of(CampaignRecipient)), rows)
    if found:
        campaign.resolved_after = found[-1][0]
    campaign.recipients = position
    return len(found) < RESOLVE_CHUNK
