"""Runs (enrollments) of an automation as the API shows them, and cancelling them.

The engine writes runs and their step records (``services.automation_backend``);
this module only reads them, counts them for ``enrollments`` and cancels the running
ones when an automation is stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.engine.runs import Phase, RunStatus
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.kernel import record_event
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Automation, AutomationRun, AutomationRunStep

RUN_STATUSES = tuple(status.value for status in RunStatus)


@dataclass(frozen=True)
class RunDetail:
    run: AutomationRun
    steps: list[AutomationRunStep]


def run_view(run: AutomationRun) -> dict[str, Any]:
    return {
        "object": "automation_run",
        "id": run.id,
        "automation_id": run.automation_id,
        "contact_id": run.contact_id,
        "status": run.status,
        "step_key": run.step_key,
        "version": run.version,
        "error": run.error,
        "created_at": isoformat_ms(run.created_at),
        "started_at": isoformat_ms(run.created_at),  # a run starts when it is made
        "updated_at": isoformat_ms(run.updated_at),
        "completed_at": isoformat_ms(run.completed_at),
    }


def run_step_view(step: AutomationRunStep) -> dict[str, Any]:
    return {
        "id": step.id,
        "step_id": step.step_id,
        "key": step.step_key,
        "type": step.type,
        "status": step.status,
        "started_at": isoformat_ms(step.started_at),
        "completed_at": isoformat_ms(step.completed_at),
        "output": step.output,
        "error": step.error,
        "created_at": isoformat_ms(step.started_at),  # a step's record is made as it starts
    }


def run_detail_view(detail: RunDetail) -> dict[str, Any]:
    return {**run_view(detail.run), "steps": [run_step_view(step) for step in detail.steps]}


async def enrollments(session: AsyncSession, automation_id: str) -> dict[str, int]:
    """``{active, completed}``: the automation's running and completed runs."""
    rows = await session.execute(
        select(AutomationRun.status, func.count())
        .where(
            AutomationRun.automation_id == automation_id,
            AutomationRun.status.in_((RunStatus.RUNNING.value, RunStatus.COMPLETED.value)),
        )
        .group_by(AutomationRun.status)
    )
    counts = {status: int(count) for status, count in rows.tuples()}
    return {
        "active": counts.get(RunStatus.RUNNING.value, 0),
        "completed": counts.get(RunStatus.COMPLETED.value, 0),
    }


async def list_runs(
    session: AsyncSession, automation: Automation, page: PageRequest, status: str | None = None
) -> Page[AutomationRun]:
    query = select(AutomationRun).where(AutomationRun.automation_id == automation.id)
    if status is not None:  # one status or a comma list (Resend's SDKs)
        wanted = {part.strip() for part in status.split(",")}
        if not wanted <= set(RUN_STATUSES):
            raise ValidationError(
                f"`status` must be one or a comma list of {', '.join(RUN_STATUSES)}."
            )
        query = query.where(AutomationRun.status.in_(sorted(wanted)))
    return await paginate(session, query, AutomationRun, page)


async def get_run(session: AsyncSession, automation: Automation, run_id: str) -> RunDetail:
    run = None
    if is_uuid(run_id):
        run = await session.scalar(
            select(AutomationRun).where(
                AutomationRun.id == run_id, AutomationRun.automation_id == automation.id
            )
        )
    if run is None:
        raise NotFound("Automation run not found.")
    steps = await session.scalars(
        select(AutomationRunStep)
        .where(AutomationRunStep.run_id == run.id)
        .order_by(AutomationRunStep.sequence, AutomationRunStep.started_at)
    )
    return RunDetail(run, list(steps.all()))


async def cancel_running(session: AsyncSession, clock: Clock, automation: Automation) -> int:
    """Cancel every running run of the automation, each with an
    ``automation.run.cancelled`` activity event; the caller commits.

    One UPDATE that re-checks ``status``: a run a runner holds is cancelled after the
    runner's transaction, and only if it is still running then."""
    now = clock.now()
    cancelled = await session.execute(
        update(AutomationRun)
        .where(
            AutomationRun.automation_id == automation.id,
            AutomationRun.status == RunStatus.RUNNING.value,
        )
        .values(
            status=RunStatus.CANCELLED.value,
            phase=Phase.DONE.value,
            due_at=None,
            waiting_event=None,
            completed_at=now,
            updated_at=now,
        )
        .returning(AutomationRun.id, AutomationRun.contact_id),
        execution_options={"synchronize_session": False},
    )
    rows = list(cancelled.tuples())
    for run_id, contact_id in sorted(rows):
        record_event(
            session,
            clock,
            automation.team_id,
            "automation.run.cancelled",
            {
                "id": run_id,
                "automation_id": automation.id,
                "contact_id": contact_id,
                "status": RunStatus.CANCELLED.value,
            },
        )
    return len(rows)


async def runs_of_contact(
    session: AsyncSession, team_id: str, contact_id: str, limit: int = 20
) -> list[AutomationRun]:
    """A contact's latest runs, in every automation of the team (the dashboard's contact)."""
    rows = await session.scalars(
        select(AutomationRun)
        .where(AutomationRun.team_id == team_id, AutomationRun.contact_id == contact_id)
        .order_by(AutomationRun.created_at.desc())
        .limit(limit)
    )
    return list(rows.all())
