"""Received mail: one row per message a team received, one per attachment; the raw bytes
are content-addressed blobs under the data directory."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class ReceivedEmail(Base):
    """A message received for one of the team's domains (or a bounce, complaint or reply
    to its mail: ``kind``, with the ``email_id`` of the email it is about)."""

    __tablename__ = "received_emails"
    __table_args__ = (
        Index("ix_received_emails_team_created", "team_id", "created_at", "id"),
        # A message is stored once an envelope recipient: the same bytes again for the
        # same recipient are a sender's retry.
        Index(
            "uq_received_emails_team_blob_recipient", "team_id", "blob", "recipient", unique=True
        ),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    envelope_from: Mapped[str] = mapped_column(String(640))
    envelope_to: Mapped[list[str]] = mapped_column(JSON)
    recipient: Mapped[str] = mapped_column(String(320), server_default="")  # lower-case
    from_address: Mapped[str | None] = mapped_column(Text)
    to: Mapped[list[str]] = mapped_column(JSON, default=list)
    cc: Mapped[list[str]] = mapped_column(JSON, default=list)
    subject: Mapped[str | None] = mapped_column(Text)
    message_id: Mapped[str | None] = mapped_column(Text)
    in_reply_to: Mapped[str | None] = mapped_column(Text)
    references: Mapped[list[str]] = mapped_column(JSON, default=list)
    text: Mapped[str | None] = mapped_column(Text)
    html: Mapped[str | None] = mapped_column(Text)
    headers: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # pass fail softfail neutral none temperror permerror (SPF); pass fail none (DKIM)
    spf: Mapped[str | None] = mapped_column(String(16))
    dkim: Mapped[str | None] = mapped_column(String(16))
    dmarc: Mapped[str | None] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(Integer)
    blob: Mapped[str] = mapped_column(String(64))  # SHA-256 of the raw bytes
    parse_error: Mapped[str | None] = mapped_column(Text)
    # message reply auto_reply bounce delay complaint unmatched_report
    kind: Mapped[str] = mapped_column(String(16))
    email_id: Mapped[str | None] = mapped_column(IdColumnType())
    unmatched_reason: Mapped[str | None] = mapped_column(Text)  # why a report was not acted on
    created_at: Mapped[datetime]


class ReceivedAttachment(Base):
    __tablename__ = "received_attachments"
    __table_args__ = (Index("ix_received_attachments_email", "received_email_id", "position"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    received_email_id: Mapped[str] = mapped_column(
        ForeignKey("received_emails.id", ondelete="CASCADE")
    )
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    filename: Mapped[str | None] = mapped_column(Text)
    content_type: Mapped[str] = mapped_column(String(255))
    content_id: Mapped[str | None] = mapped_column(Text)
    size: Mapped[int] = mapped_column(Integer)
    checksum: Mapped[str] = mapped_column(String(64))  # SHA-256, also its blob's name
    created_at: Mapped[datetime]
