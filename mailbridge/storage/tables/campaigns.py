"""Campaigns and their recipients: the marketing sends of an audience."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Campaign(Base):
    """One campaign (a recurring one's occurrences are children: ``parent_id``).

    ``due_at`` says when the runner acts on it next (null: nothing to do), ``phase``
    what it does then: ``start`` (a scheduled send's time has come), ``occur`` (a
    recurring campaign's next occurrence), ``resolve`` (write the recipient rows,
    ``resolved_after`` is where it stopped), ``emails`` (turn due recipient rows into
    emails), ``decide`` (the A/B test's time is up). ``lease_owner``/``lease_until``
    are a runner's claim."""

    __tablename__ = "campaigns"
    __table_args__ = (
        Index("ix_campaigns_team_created", "team_id", "created_at", "id"),
        Index("ix_campaigns_due", "due_at"),
        Index("uq_campaigns_parent_occurrence", "parent_id", "occurrence_at", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str | None] = mapped_column(String(200))
    from_address: Mapped[str | None] = mapped_column(String(640))
    subject: Mapped[str | None] = mapped_column(String(998))
    html: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    template_id: Mapped[str | None] = mapped_column(IdColumnType())
    variables: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    reply_to: Mapped[list[str]] = mapped_column(JSON, default=list)
    preview_text: Mapped[str | None] = mapped_column(String(998))
    audience_id: Mapped[str | None] = mapped_column(IdColumnType())
    segment_id: Mapped[str | None] = mapped_column(IdColumnType())
    topic_id: Mapped[str | None] = mapped_column(IdColumnType())
    recurrence: Mapped[str | None] = mapped_column(String(500))
    batch_size_per_day: Mapped[int | None] = mapped_column(Integer)
    ab: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # What it sends, fixed at send (a template's published content, the A/B arms).
    content: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # draft queued scheduled recurring sending sent canceled
    status: Mapped[str] = mapped_column(String(16))
    scheduled_at: Mapped[datetime | None]
    schedule_timezone: Mapped[str | None] = mapped_column(String(64))
    parent_id: Mapped[str | None] = mapped_column(IdColumnType())
    occurrence_at: Mapped[datetime | None]  # a child's occurrence of its parent's rule
    last_occurrence_at: Mapped[datetime | None]  # a recurring campaign's latest child
    phase: Mapped[str | None] = mapped_column(String(16))
    due_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]
    started_at: Mapped[datetime | None]  # when its emails began (batch 0, the A/B clock)
    resolved_after: Mapped[str | None] = mapped_column(IdColumnType())
    recipients: Mapped[int] = mapped_column(Integer, default=0)
    ab_winner: Mapped[str | None] = mapped_column(String(1))
    ab_decided_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class CampaignRecipient(Base):
    """A contact a campaign sends to, resolved once when it starts. ``variant``: ``A`` or
    ``B`` in an A/B test, null for the rest (the winner's); ``batch``: the day it is due
    (daily batches); ``email_id`` once its email exists."""

    __tablename__ = "campaign_recipients"
    __table_args__ = (
        # The recipients still without an email, in order: each chunk reads the next ones.
        Index("ix_campaign_recipients_pending", "campaign_id", "email_id", "position"),
    )

    campaign_id: Mapped[str] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    contact_id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    position: Mapped[int] = mapped_column(Integer)
    batch: Mapped[int] = mapped_column(Integer, default=0)
    variant: Mapped[str | None] = mapped_column(String(1))
    email_id: Mapped[str | None] = mapped_column(IdColumnType())
