"""Runs (enrollments) and what a step's execution can lead to.

A run is ``running`` until it is ``completed``, ``failed`` or ``cancelled``. While
running it is in one *phase*: ``ready`` (execute ``step_key`` when ``due_at`` comes),
``sleeping`` (a delay: the step completes at ``due_at``) or ``waiting`` (a
wait_for_event: resumed by a matching event, or timed out at ``due_at`` if set).
A finished run is in phase ``done``.

Steps return an :data:`Outcome`; the engine (:mod:`mailbridge.engine.engine`) turns
it into the run's next state and the step's record.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Phase(StrEnum):
    READY = "ready"
    SLEEPING = "sleeping"
    WAITING = "waiting"
    DONE = "done"


class StepStatus(StrEnum):
    RUNNING = "running"  # a delay or a wait, parked
    COMPLETED = "completed"
    TIMED_OUT = "timed_out"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass
class Run:
    id: str
    team_id: str
    automation_id: str
    version: int
    contact_id: str | None
    status: RunStatus
    step_key: str | None
    phase: Phase
    due_at: datetime | None
    created_at: datetime
    updated_at: datetime
    waiting_event: str | None = None
    # {"event_name": str, "event": payload, "received": {"name", "payload"} while resuming}
    context: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    completed_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.status is RunStatus.RUNNING

    def data(self, contact: dict[str, Any] | None) -> dict[str, Any]:
        """What conditions and values read: ``event.*`` and ``contact.*``."""
        return {"event": self.context.get("event") or {}, "contact": contact or {}}


def record_id(run_id: str, step_key: str) -> str:
    """A step executes at most once in a run (graphs have no cycles): its record's id is
    derived, so writing it twice is an upsert, never a duplicate."""
    # uuid.uuid5(uuid.UUID(run_id), step_key), computed without building UUID objects
    # (this runs for every step a runner executes).
    digest = bytearray(
        hashlib.sha1(bytes.fromhex(run_id.replace("-", "")) + step_key.encode()).digest()[:16]
    )
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass
class StepRecord:
    id: str
    run_id: str
    step_id: str | None
    step_key: str
    type: str
    status: StepStatus
    started_at: datetime
    completed_at: datetime | None = None
    output: dict[str, Any] | None = None
    error: str | None = None
    sequence: int = 0  # execution order within the run (1, 2, ...)


# -- outcomes of executing a step -----------------------------------------------------


@dataclass(frozen=True)
class Next:
    """Done: follow the connection of type ``via`` (none of that type: the run completes)."""

    via: str = "default"
    output: dict[str, Any] | None = None
    skipped: bool = False


@dataclass(frozen=True)
class Sleep:
    """Park until ``until``; then the step completes and the run follows ``default``."""

    until: datetime
    output: dict[str, Any] | None = None


@dataclass(frozen=True)
class Wait:
    """Park until ``event_name`` arrives for the contact (``event_received``) or
    ``timeout_at`` passes (``timeout``)."""

    event_name: str
    timeout_at: datetime | None
    output: dict[str, Any] | None = None


@dataclass(frozen=True)
class End:
    """The step completed and the run ends here (contact_delete)."""

    output: dict[str, Any] | None = None


@dataclass(frozen=True)
class Fail:
    """The step cannot succeed: the run fails with ``error``."""

    error: str


@dataclass(frozen=True)
class Retry:
    """Not now (a quota, a busy resource): execute the same step again at ``at``."""

    at: datetime
    reason: str


Outcome = Next | Sleep | Wait | End | Fail | Retry
