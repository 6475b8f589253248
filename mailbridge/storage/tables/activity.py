"""Activity events: what happened in a team (contact.created, email.delivered, ...).

Written in the same transaction as the change they describe; webhooks and
automation triggers consume them later (rows first, side effects after): the runner's
activity dispatcher hands undispatched events (``dispatched_at`` null, a small partial
index) to its consumers and stamps them in the same transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class ActivityEvent(Base):
    __tablename__ = "activity_events"
    __table_args__ = (
        Index("ix_activity_events_team_created", "team_id", "created_at", "id"),
        Index("ix_activity_events_type_created", "type", "created_at"),
        Index(
            "ix_activity_events_undispatched",
            "created_at",
            "id",
            postgresql_where=text("dispatched_at IS NULL"),
            sqlite_where=text("dispatched_at IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(100))
    # Set when a key limited to this domain caused the event (a contact its event made):
    # it then starts and resumes only that domain's automations.
    scope_domain: Mapped[str | None] = mapped_column(String(253))
    data: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    dispatched_at: Mapped[datetime | None]
