"""Webhooks: the endpoints a team registered, and one delivery row per event and endpoint.

A webhook's id is a number (spec §4.10); on SQLite the table is ``AUTOINCREMENT`` so
the id of a deleted webhook is never given to a new one.

A delivery is durable work (DESIGN §3): ``due_at`` is when a runner should attempt it
next — and, while a runner holds it, when that runner's lease runs out — and is null
once the delivery is over (``succeeded`` or ``failed``). Deleting a webhook deletes
its deliveries, queued retries included.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Webhook(Base):
    __tablename__ = "webhooks"
    __table_args__ = (
        Index("ix_webhooks_team_created", "team_id", "created_at", "id"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    endpoint: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    # Signs every delivery, so it is kept as is; shown only in the create answer.
    secret: Mapped[str] = mapped_column(String(100))
    # After a rotation the secret before it still signs, beside it, until this time.
    previous_secret: Mapped[str | None] = mapped_column(String(100))
    previous_secret_until: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(16))  # enabled | disabled
    disabled_reason: Mapped[str | None] = mapped_column(Text)
    # The first failed attempt since the last successful one (null: not failing).
    failing_since: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_webhook_created", "webhook_id", "created_at", "id"),
        Index(
            "ix_webhook_deliveries_due",
            "due_at",
            postgresql_where=text("due_at IS NOT NULL"),
            sqlite_where=text("due_at IS NOT NULL"),
        ),
        # A delivery waits for the earlier ones of its sequence (``_deliveries``).
        Index(
            "ix_webhook_deliveries_sequence",
            "webhook_id",
            "sequence_key",
            "event_id",
            postgresql_where=text("due_at IS NOT NULL AND sequence_key IS NOT NULL"),
            sqlite_where=text("due_at IS NOT NULL AND sequence_key IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    # The activity event delivered (no foreign key: events may be purged, deliveries stay).
    event_id: Mapped[str] = mapped_column(IdColumnType())
    event_type: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)  # the exact bytes POSTed (and signed), UTF-8
    status: Mapped[str] = mapped_column(String(16))  # pending succeeded failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # attempts started
    # One entry per finished attempt: {at, status_code, duration_ms, error}.
    attempt_log: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    last_error: Mapped[str | None] = mapped_column(Text)
    due_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    replay_of: Mapped[str | None] = mapped_column(IdColumnType())
    # Deliveries to one webhook with the same key go out in the order of their events
    # (``email:<email id>``: an email's events); null: no order to keep (replays too).
    sequence_key: Mapped[str | None] = mapped_column(String(80))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
