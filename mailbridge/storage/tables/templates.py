"""Templates and their versions: a published version never changes; edits make a draft."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Template(Base):
    __tablename__ = "templates"
    __table_args__ = (
        Index("uq_templates_team_alias", "team_id", "alias", unique=True),
        Index("ix_templates_team_created", "team_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    alias: Mapped[str | None] = mapped_column(String(100))
    # No foreign keys here: versions point at their template, and these two are pointers back.
    draft_version_id: Mapped[str | None] = mapped_column(IdColumnType())
    published_version_id: Mapped[str | None] = mapped_column(IdColumnType())
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    published_at: Mapped[datetime | None]


class TemplateVersion(Base):
    __tablename__ = "template_versions"
    __table_args__ = (
        Index("uq_template_versions_template_number", "template_id", "number", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    template_id: Mapped[str] = mapped_column(ForeignKey("templates.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(200))
    from_address: Mapped[str | None] = mapped_column(String(640))
    subject: Mapped[str | None] = mapped_column(String(998))
    reply_to: Mapped[Any | None] = mapped_column(JSON)  # a string or a list of strings
    html: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    variables: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime]
    published_at: Mapped[datetime | None]
