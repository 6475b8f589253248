"""Outbound email: the email rows the runner delivers, their events and attachments,
the suppression list, idempotency records and quota usage."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Email(Base):
    """One email to deliver. ``due_at`` says when the runner should act on it next
    (null: nothing to do); ``lease_owner``/``lease_until`` are a runner's claim."""

    __tablename__ = "emails"
    __table_args__ = (
        Index("ix_emails_team_created", "team_id", "created_at", "id"),
        Index("ix_emails_due", "due_at"),
        Index("ix_emails_team_status", "team_id", "status"),
        Index("ix_emails_campaign", "campaign_id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    api_key_id: Mapped[str | None] = mapped_column(IdColumnType())
    domain_id: Mapped[str | None] = mapped_column(ForeignKey("domains.id", ondelete="SET NULL"))
    from_address: Mapped[str] = mapped_column(String(640))  # as given: "Name <a@b>" or "a@b"
    from_email: Mapped[str] = mapped_column(String(320))
    to: Mapped[list[str]] = mapped_column(JSON)
    cc: Mapped[list[str]] = mapped_column(JSON, default=list)
    bcc: Mapped[list[str]] = mapped_column(JSON, default=list)
    reply_to: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Addresses that will be delivered to (to+cc+bcc, suppressed ones removed), lower-case.
    delivery_recipients: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Every address, lower-case, framed by newlines: "\na@x\nb@y\n" (recipient filters).
    recipients_text: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(String(998))
    html: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    headers: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    tags: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    template_id: Mapped[str | None] = mapped_column(IdColumnType())
    template_version_id: Mapped[str | None] = mapped_column(IdColumnType())
    contact_id: Mapped[str | None] = mapped_column(IdColumnType())
    campaign_id: Mapped[str | None] = mapped_column(IdColumnType())
    marketing: Mapped[bool] = mapped_column(default=False)  # adds one-click unsubscribe
    # queued scheduled sent delivered delivery_delayed bounced complained opened clicked
    # failed canceled suppressed
    status: Mapped[str] = mapped_column(String(32))
    last_event: Mapped[str] = mapped_column(String(32))
    scheduled_at: Mapped[datetime | None]
    due_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    message_id: Mapped[str] = mapped_column(String(255))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    # The runner that made the handover still to be settled (its receipts tell whether
    # the terminator went out), kept when another runner leases the email to settle it.
    handed_over_by: Mapped[str | None] = mapped_column(String(64))
    # Where each real recipient stands (``services.delivery._recipients``): address →
    # queued, retrying, sent (handed over, answer pending), delivered, bounced, failed,
    # unconfirmed, delivery_delayed, complained. Null: never attempted since recipients
    # got envelopes of their own (rows from before, or not attempted yet).
    recipient_states: Mapped[dict[str, str] | None] = mapped_column(JSON)


class EmailEvent(Base):
    """One step in an email's life (``sent``, ``delivered``, ``opened`` ...)."""

    __tablename__ = "email_events"
    __table_args__ = (Index("ix_email_events_email_created", "email_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    email_id: Mapped[str] = mapped_column(ForeignKey("emails.id", ondelete="CASCADE"))
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(32))
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime]


class EmailAttachment(Base):
    """An attachment: its bytes (from base64 ``content``) or a ``path`` fetched at send time."""

    __tablename__ = "email_attachments"
    __table_args__ = (Index("ix_email_attachments_email", "email_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    email_id: Mapped[str] = mapped_column(ForeignKey("emails.id", ondelete="CASCADE"))
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    filename: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(255))
    content_id: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[int | None] = mapped_column(Integer)
    path: Mapped[str | None] = mapped_column(Text)
    content: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime]


class Suppression(Base):
    """An address the team never sends to: bounced, complained, or added by hand."""

    __tablename__ = "suppressions"
    __table_args__ = (
        Index("uq_suppressions_team_email", "team_id", "email", unique=True),
        Index("ix_suppressions_team_created", "team_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    reason: Mapped[str] = mapped_column(String(20))  # bounced complained manual
    source_email_id: Mapped[str | None] = mapped_column(IdColumnType())
    created_at: Mapped[datetime]


class IdempotencyRecord(Base):
    """An Idempotency-Key seen on a send endpoint, and the answer it got (kept 24 h)."""

    __tablename__ = "idempotency_records"
    __table_args__ = (Index("ix_idempotency_records_expires", "expires_at"),)

    team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(64))
    request_hash: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))  # in_progress completed
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[Any | None] = mapped_column(JSON)
    response_headers: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class QuotaUsage(Base):
    """Recipients charged to a team in one hour; rolling windows sum these buckets."""

    __tablename__ = "quota_usage"

    team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    bucket_start: Mapped[datetime] = mapped_column(primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class InstanceSetting(Base):
    """Instance-wide values every process must share (e.g. the tracking-link secret)."""

    __tablename__ = "instance_settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class EmailShare(Base):
    """A public link to one email as it reads (sent, or received: ``source``), until it
    expires or is revoked. Only the token's SHA-256 is kept."""

    __tablename__ = "email_shares"
    __table_args__ = (
        Index("uq_email_shares_token", "token_digest", unique=True),
        Index("ix_email_shares_email", "team_id", "email_id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    email_id: Mapped[str] = mapped_column(IdColumnType())
    source: Mapped[str] = mapped_column(String(8))  # sent received
    token_digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
