"""Sending domains, their DKIM keys and DNS verification state; ownership claims."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Domain(Base):
    __tablename__ = "domains"
    __table_args__ = (
        Index("uq_domains_team_name", "team_id", "name", unique=True),
        Index("ix_domains_name_status", "name", "status"),
        Index("ix_domains_team_created", "team_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(253))
    # not_started pending verified partially_verified partially_failed failed
    status: Mapped[str] = mapped_column(String(32), default="not_started")
    region: Mapped[str] = mapped_column(String(32), default="us-east-1")
    dkim_selector: Mapped[str] = mapped_column(String(63))
    dkim_private_key: Mapped[str] = mapped_column(Text)  # PEM
    dkim_public_key: Mapped[str] = mapped_column(Text)  # base64 DER, as published in p=
    return_path: Mapped[str] = mapped_column(String(63), default="send")
    tracking_subdomain: Mapped[str] = mapped_column(String(63), default="links")
    open_tracking: Mapped[bool] = mapped_column(default=False)
    click_tracking: Mapped[bool] = mapped_column(default=False)
    # Mail to the domain is received (its MX points at mailbridge): /emails/receiving.
    receiving: Mapped[bool] = mapped_column(server_default=false())
    tls: Mapped[str] = mapped_column(String(16), default="opportunistic")
    # record key (dkim, spf, return_path_mx, tracking) -> not_started|pending|verified|failed
    record_status: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    last_checked_at: Mapped[datetime | None]
    verified_at: Mapped[datetime | None]


class DomainClaim(Base):
    """A team proving it owns a domain that another team has verified (POST /domains/claim)."""

    __tablename__ = "domain_claims"
    __table_args__ = (Index("ix_domain_claims_team_name", "team_id", "name"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(253))
    token: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending completed
    created_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
