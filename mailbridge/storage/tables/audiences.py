"""Audiences and what lives in them: contacts, properties, segments, topics."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Audience(Base):
    __tablename__ = "audiences"
    __table_args__ = (Index("ix_audiences_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    is_default: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]


class Contact(Base):
    __tablename__ = "contacts"
    __table_args__ = (
        Index("uq_contacts_audience_email", "audience_id", "email", unique=True),
        Index("ix_contacts_team_created", "team_id", "created_at", "id"),
        Index("ix_contacts_team_email", "team_id", "email"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    audience_id: Mapped[str] = mapped_column(ForeignKey("audiences.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))  # stored lower-case
    first_name: Mapped[str | None] = mapped_column(String(200))
    last_name: Mapped[str | None] = mapped_column(String(200))
    unsubscribed: Mapped[bool] = mapped_column(default=False)
    properties: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ContactProperty(Base):
    __tablename__ = "contact_properties"
    __table_args__ = (
        Index("uq_contact_properties_team_key", "team_id", "key", unique=True),
        Index("ix_contact_properties_team_created", "team_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(50))
    type: Mapped[str] = mapped_column(String(10))  # string number boolean date
    fallback_value: Mapped[Any | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ContactLock(Base):
    """The per-team contact lock that bulk writes hold (a lease, so a crash frees it)."""

    __tablename__ = "contact_locks"

    team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    holder: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime]


class Segment(Base):
    __tablename__ = "segments"
    __table_args__ = (Index("ix_segments_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    audience_id: Mapped[str] = mapped_column(ForeignKey("audiences.id", ondelete="CASCADE"))
    domain: Mapped[str | None] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(200))
    filter: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class SegmentMember(Base):
    """A contact added to a segment by hand (besides those its filter matches)."""

    __tablename__ = "segment_members"
    __table_args__ = (Index("ix_segment_members_contact", "contact_id"),)

    segment_id: Mapped[str] = mapped_column(
        ForeignKey("segments.id", ondelete="CASCADE"), primary_key=True
    )
    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    created_at: Mapped[datetime]


class ContactEngagement(Base):
    """A contact's first open or click of a campaign's email: what engagement filters read."""

    __tablename__ = "contact_engagements"
    __table_args__ = (Index("ix_contact_engagements_campaign", "campaign_id", "kind"),)

    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    campaign_id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True)
    # opened clicked unsubscribed
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    first_at: Mapped[datetime]


class Topic(Base):
    __tablename__ = "topics"
    __table_args__ = (Index("ix_topics_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    default_subscription: Mapped[str] = mapped_column(String(10))  # opt_in opt_out
    visibility: Mapped[str] = mapped_column(String(10), default="public")  # public private
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ContactTopic(Base):
    """A contact's own choice for a topic; absent means the topic's default."""

    __tablename__ = "contact_topics"
    __table_args__ = (Index("ix_contact_topics_topic", "topic_id"),)

    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    topic_id: Mapped[str] = mapped_column(
        ForeignKey("topics.id", ondelete="CASCADE"), primary_key=True
    )
    subscription: Mapped[str] = mapped_column(String(10))  # opt_in opt_out
    updated_at: Mapped[datetime]


class ContactImport(Base):
    """A CSV import job: its rows wait in ``contact_import_chunks`` and a runner writes
    one chunk a transaction, the chunk's contacts and the job's counts together."""

    __tablename__ = "contact_imports"
    __table_args__ = (
        Index("ix_contact_imports_team_created", "team_id", "created_at", "id"),
        Index("ix_contact_imports_status", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    audience_id: Mapped[str] = mapped_column(ForeignKey("audiences.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))  # queued in_progress completed failed
    on_conflict: Mapped[str] = mapped_column(String(8))  # upsert skip
    # {property key: type} for the columns mapped to properties
    property_types: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    segment_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    topics: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)  # topic id: opt_in|opt_out
    total: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    skipped: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)  # the first ones
    failure: Mapped[str | None] = mapped_column(Text)
    chunks: Mapped[int] = mapped_column(Integer, default=0)
    next_chunk: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class ContactImportChunk(Base):
    """Rows of an import still to write, as mapped at upload (deleted once written)."""

    __tablename__ = "contact_import_chunks"

    import_id: Mapped[str] = mapped_column(
        ForeignKey("contact_imports.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    rows: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
