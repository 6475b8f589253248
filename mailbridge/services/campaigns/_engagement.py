"""Who did what with a campaign, as Resend's broadcast routes tell it: the recipients
that reached an event (``GET /broadcasts/:id/recipients``) and the links clicked
(``GET /broadcasts/:id/clicked-links``), read from the campaign's emails and their events.

A recipient row is one email of the campaign (its id is the cursor); ``count`` is how
many times the event happened to it. ``unsubscribed`` is the contact's first
unsubscribe through the campaign (``contact_engagements``). A bounce is ``permanent``
when the report said hard, or when the receiving server refused the message outright
(no report kind), ``transient`` when soft; mailbridge records no third kind. A link's
id is derived from the campaign and the URL, so a cursor stays valid.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.storage.pagination import Page, PageRequest, page_in_memory, paginate
from mailbridge.storage.tables import (
    Campaign,
    CampaignRecipient,
    ContactEngagement,
    Email,
    EmailEvent,
)

RECIPIENT_EVENTS = (
    "sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed",
    "suppressed",
)  # fmt: skip
BOUNCE_TYPES = ("permanent", "transient", "undetermined")
_LINK_IDS = uuid.UUID("5d0f3c1e-8b2a-4f6e-9c7d-2a1b3e4f5a60")


@dataclass(frozen=True)
class Recipient:
    email: Email
    address: str
    count: int
    bounce_type: str | None = None
    clicked_links: Sequence[tuple[str, int]] = ()


def _json_text(*path: str) -> ColumnElement[str]:
    """The text at ``path`` in an event's data (JSON), as both databases read it."""
    column: Any = EmailEvent.data
    for key in path:
        column = column[key]
    text: ColumnElement[str] = column.as_string()
    return text


def _bounce_type(kind: str | None) -> str:
    """A bounce report's kind (``bounce.type``) in Resend's words."""
    return "transient" if kind == "soft" else "permanent"


def _bounce_condition(bounce_type: str) -> ColumnElement[bool]:
    """The SQL of :func:`_bounce_type` ``== bounce_type``."""
    kind = _json_text("bounce", "type")
    if bounce_type == "permanent":
        return or_(kind.is_(None), kind != "soft")
    if bounce_type == "transient":
        return kind == "soft"
    return false()


def _check(event: str, bounce_type: str | None) -> None:
    if event not in RECIPIENT_EVENTS:
        raise ValidationError(f"`type` must be one of {', '.join(RECIPIENT_EVENTS)}.")
    if bounce_type is not None:
        if bounce_type not in BOUNCE_TYPES:
            raise ValidationError(f"`bounce_type` must be one of {', '.join(BOUNCE_TYPES)}.")
        if event != "bounced":
            raise ValidationError("`bounce_type` filters `type=bounced` only.")


async def campaign_recipients(
    session: AsyncSession,
    campaign: Campaign,
    event: str,
    page: PageRequest,
    *,
    address: str | None = None,
    bounce_type: str | None = None,
) -> Page[Recipient]:
    """The campaign's recipients that reached ``event``, newest email first."""
    _check(event, bounce_type)
    query = select(Email).where(Email.campaign_id == campaign.id)
    if event == "unsubscribed":
        query = query.where(
            exists().where(
                ContactEngagement.campaign_id == campaign.id,
                ContactEngagement.kind == "unsubscribed",
                ContactEngagement.contact_id == Email.contact_id,
            )
        )
    else:
        reached = [EmailEvent.email_id == Email.id, EmailEvent.type == event]
        if bounce_type is not None:
            reached.append(_bounce_condition(bounce_type))
        query = query.where(exists().where(*reached))
    if address:
        pattern = "%" + address.lower().replace("\\", "\\\\").replace("%", "\\%") + "%"
        query = query.where(
            exists().where(
                CampaignRecipient.email_id == Email.id,
                func.lower(CampaignRecipient.email).like(pattern, escape="\\"),
            )
        )
    emails = await paginate(session, query, Email, page)
    return Page(await _recipients(session, emails.items, event), emails.has_more)


async def _recipients(
    session: AsyncSession, emails: Sequence[Email], event: str
) -> list[Recipient]:
    ids = [email.id for email in emails]
    counts: dict[str, int] = {}
    bounces: dict[str, str] = {}
    links: dict[str, list[tuple[str, int]]] = {}
    if ids and event != "unsubscribed":
        rows = await session.execute(
            select(EmailEvent.email_id, func.count())
            .where(EmailEvent.email_id.in_(ids), EmailEvent.type == event)
            .group_by(EmailEvent.email_id)
        )
        counts = {email_id: int(count) for email_id, count in rows.tuples()}
    if ids and event == "bounced":
        bounced = await session.execute(
            select(EmailEvent.email_id, _json_text("bounce", "type"))
            .where(EmailEvent.email_id.in_(ids), EmailEvent.type == "bounced")
            .order_by(EmailEvent.created_at, EmailEvent.id)
        )
        bounces = {email_id: _bounce_type(kind) for email_id, kind in bounced.tuples()}
    if ids and event == "clicked":
        link = _json_text("click", "link")
        clicked = await session.execute(
            select(EmailEvent.email_id, link, func.count())
            .where(EmailEvent.email_id.in_(ids), EmailEvent.type == "clicked")
            .group_by(EmailEvent.email_id, link)
            .order_by(EmailEvent.email_id, func.count().desc(), link)
        )
        for email_id, url, clicks in clicked.tuples():
            links.setdefault(email_id, []).append((str(url), int(clicks)))
    return [
        Recipient(
            email,
            (email.to or [""])[0],
            counts.get(email.id, 1),
            bounces.get(email.id),
            links.get(email.id, []),
        )
        for email in emails
    ]


def recipient_view(recipient: Recipient) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": recipient.email.id,
        "email_id": recipient.email.id,
        "contact_id": recipient.email.contact_id,
        "email": recipient.address,
        "count": recipient.count,
    }
    if recipient.bounce_type is not None:
        view["bounce_type"] = recipient.bounce_type
    if recipient.clicked_links:
        view["clicked_links"] = [{"url": u, "clicks": n} for u, n in recipient.clicked_links]
    return view


@dataclass(frozen=True)
class ClickedLink:
    id: str
    url: str
    clicks: int
    unique_clicks: int


async def clicked_links(
    session: AsyncSession, campaign: Campaign, page: PageRequest
) -> Page[ClickedLink]:
    """The links of the campaign's emails that were clicked, most clicked first."""
    link = _json_text("click", "link")
    rows = await session.execute(
        select(link, func.count(), func.count(func.distinct(EmailEvent.email_id)))
        .join(Email, Email.id == EmailEvent.email_id)
        .where(and_(Email.campaign_id == campaign.id, EmailEvent.type == "clicked"))
        .group_by(link)
    )
    found = sorted(
        (
            ClickedLink(str(uuid.uuid5(_LINK_IDS, f"{campaign.id}:{url}")), str(url), n, unique)
            for url, n, unique in rows.tuples()
            if url is not None
        ),
        key=lambda item: (-item.clicks, item.url),
    )
    return page_in_memory(found, page, lambda item: item.id)


def clicked_link_view(item: ClickedLink) -> dict[str, Any]:
    return {"id": item.id, "url": item.url, "clicks": item.clicks,
            "unique_clicks": item.unique_clicks}  # fmt: skip
