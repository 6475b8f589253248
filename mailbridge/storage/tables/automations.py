"""Automations, their graph versions, runs (enrollments) and executed steps; event definitions.

A run keeps the graph version it started on: ``automation_versions`` is append-only and
a run points at one version. A parked run is one row with a ``due_at`` (a delay's wake
time or a wait's timeout) or a ``waiting_event``; the runner reads only due rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id


class Automation(Base):
    __tablename__ = "automations"
    __table_args__ = (
        Index("ix_automations_team_created", "team_id", "created_at", "id"),
        Index("ix_automations_trigger", "team_id", "trigger_event", "status"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    audience_id: Mapped[str] = mapped_column(ForeignKey("audiences.id", ondelete="CASCADE"))
    domain: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))  # enabled | disabled
    trigger_event: Mapped[str] = mapped_column(String(200))
    trigger_key: Mapped[str] = mapped_column(String(100))
    trigger_config: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    version: Mapped[int] = mapped_column(Integer, default=1)  # current automation_versions row
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class AutomationVersion(Base):
    """The graph as it was at one version, in the stored vocabulary; never changed."""

    __tablename__ = "automation_versions"

    automation_id: Mapped[str] = mapped_column(
        ForeignKey("automations.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    graph: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]


class AutomationRun(Base):
    __tablename__ = "automation_runs"
    __table_args__ = (
        Index(
            "ix_automation_runs_due",
            "due_at",
            postgresql_where=text("status = 'running'"),
            sqlite_where=text("status = 'running'"),
        ),
        Index("ix_automation_runs_automation_created", "automation_id", "created_at", "id"),
        # Without the status: finishing a run then leaves this index alone (many of the
        # pages a batch of woken runs wrote); a contact has few runs per automation.
        Index("ix_automation_runs_automation_contact", "automation_id", "contact_id"),
        Index("ix_automation_runs_team_created", "team_id", "created_at"),
        Index(
            "ix_automation_runs_waiting",
            "contact_id",
            "waiting_event",
            postgresql_where=text("waiting_event IS NOT NULL"),
            sqlite_where=text("waiting_event IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    automation_id: Mapped[str] = mapped_column(ForeignKey("automations.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    # No foreign key: a run outlives the contact it deleted (its history stays readable).
    contact_id: Mapped[str | None] = mapped_column(IdColumnType())
    status: Mapped[str] = mapped_column(String(16))  # running completed failed cancelled
    step_key: Mapped[str | None] = mapped_column(String(100))  # the step to execute or parked on
    phase: Mapped[str] = mapped_column(String(16))  # ready sleeping waiting done
    due_at: Mapped[datetime | None]  # ready: now; sleeping: wake; waiting: timeout (or null)
    waiting_event: Mapped[str | None] = mapped_column(String(200))
    context: Mapped[dict[str, Any]] = mapped_column(JSON)  # {"event": {...}, "steps": {...}}
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class AutomationRunStep(Base):
    """One executed step of a run: what it did, when, and what came out.

    Keyed by (run, step key) — a step executes at most once in a run — so the key is
    also the index that lists a run's steps: one index to write per record, not two.
    ``id`` is derived from the same pair (``engine.runs.record_id``) and shown as is.
    """

    __tablename__ = "automation_run_steps"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("automation_runs.id", ondelete="CASCADE"), primary_key=True
    )
    step_key: Mapped[str] = mapped_column(String(100), primary_key=True)
    id: Mapped[str] = mapped_column(IdColumnType(), default=new_id)
    step_id: Mapped[str | None] = mapped_column(IdColumnType())
    sequence: Mapped[int] = mapped_column(Integer)  # execution order within the run
    type: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))  # completed failed waiting skipped
    started_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    output: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)


class EventDefinition(Base):
    """A custom event name with an optional flat payload schema ({field: type})."""

    __tablename__ = "event_definitions"
    __table_args__ = (
        Index("uq_event_definitions_team_name", "team_id", "name", unique=True),
        Index("ix_event_definitions_team_created", "team_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    schema: Mapped[dict[str, str] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
