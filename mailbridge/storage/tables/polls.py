"""Polls embedded in mail, and the votes their recipients cast: one row a voter and poll."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Poll(Base):
    __tablename__ = "polls"
    __table_args__ = (Index("ix_polls_team_created", "team_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    question: Mapped[str] = mapped_column(String(500))
    options: Mapped[list[str]] = mapped_column(JSON)  # the labels, in the order shown
    allow_change: Mapped[bool] = mapped_column(default=False)
    closes_at: Mapped[datetime | None]
    closed_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class PollVote(Base):
    """A voter's choice. ``voter`` is the contact id when the mail went to a contact, else
    the lower-cased address; the unique index makes concurrent clicks one row."""

    __tablename__ = "poll_votes"
    __table_args__ = (
        Index("uq_poll_votes_poll_voter", "poll_id", "voter", unique=True),
        Index("ix_poll_votes_poll_created", "poll_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    poll_id: Mapped[str] = mapped_column(ForeignKey("polls.id", ondelete="CASCADE"))
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    voter: Mapped[str] = mapped_column(String(320))
    contact_id: Mapped[str | None] = mapped_column(IdColumnType())
    email: Mapped[str] = mapped_column(String(320))
    option: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]  # the first vote
    updated_at: Mapped[datetime]  # the vote that counts (a changed one, with allow_change)
