"""Teams, members, their sessions, API keys and the request log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Team(Base):
    """A tenant: every resource belongs to exactly one team."""

    __tablename__ = "teams"

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    plan: Mapped[str] = mapped_column(String(20), default="free")
    # IANA name: where campaigns' daily batches roll over unless a send names its own.
    timezone: Mapped[str] = mapped_column(String(64), server_default="UTC")
    created_at: Mapped[datetime]


class Member(Base):
    """A person in a team, with a role: owner, admin or view_only."""

    __tablename__ = "members"
    __table_args__ = (Index("uq_members_team_email", "team_id", "email", unique=True),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime]
    # argon2id hash (argon2-cffi); null: the member cannot sign in with a password yet.
    password_hash: Mapped[str | None] = mapped_column(String(255))


class MemberInvitation(Base):
    """An owner's or admin's invitation to join a team with a role; the link's token is
    kept only as a hash, and works once, until ``expires_at``."""

    __tablename__ = "member_invitations"

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(20))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by: Mapped[str | None] = mapped_column(IdColumnType())
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    accepted_at: Mapped[datetime | None]


class MemberSession(Base):
    """A signed-in member (the dashboard's credential); the token is kept only as a hash."""

    __tablename__ = "member_sessions"

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    member_id: Mapped[str] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    token_prefix: Mapped[str] = mapped_column(String(40), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    # Where it was opened, for the member's list of sessions (the client's own words).
    user_agent: Mapped[str | None] = mapped_column(String(255))
    client_address: Mapped[str | None] = mapped_column(String(64))


class AuditEvent(Base):
    """Who changed a team's members or roles, what, and when (readable by owners)."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    actor_member_id: Mapped[str | None] = mapped_column(IdColumnType())
    actor: Mapped[str] = mapped_column(String(320))  # a member's address, or "operator"
    action: Mapped[str] = mapped_column(String(64))  # member.invited, member.role_changed, ...
    subject: Mapped[str] = mapped_column(String(320))  # the address it was about
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime]


class ApiKey(Base):
    """An API key; the token is kept only as a SHA-256 hash, looked up by its prefix."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(50))
    permission: Mapped[str] = mapped_column(String(20))
    domain: Mapped[str | None] = mapped_column(String(253))
    token_prefix: Mapped[str] = mapped_column(String(40), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]


class RequestLog(Base):
    """One API request, as GET /logs shows it; bodies are stored with secrets redacted."""

    __tablename__ = "request_logs"
    __table_args__ = (Index("ix_request_logs_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    api_key_id: Mapped[str | None] = mapped_column(IdColumnType())
    member_id: Mapped[str | None] = mapped_column(IdColumnType())
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(String(2048))
    query: Mapped[str | None] = mapped_column(Text)
    status: Mapped[int] = mapped_column(Integer)
    user_agent: Mapped[str | None] = mapped_column(String(512))
    duration_ms: Mapped[int] = mapped_column(Integer)
    request_body: Mapped[str | None] = mapped_column(Text)
    response_body: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
