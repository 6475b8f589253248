"""The engine: events start and resume runs; due runs advance step by step.

:class:`Engine` is the facade an embedding program (or mailbridge's own services and
runner) calls. It is deterministic given its clock and ports: no wall clock, no
sleeping, no I/O but through the :class:`~mailbridge.engine.ports.Backend`.

- :meth:`Engine.emit` — in one transaction: a run of every enabled automation the
  event triggers (no re-entry while the contact has an active run there, unless the
  automation allows it), and every run of the contact waiting for that event whose
  ``filter_rule`` holds is made due, to follow ``event_received``.
- :meth:`Engine.run_due` — in one transaction: claim due runs and advance each as far
  as it goes (until it parks on a delay or a wait, or ends). A batch that raises is
  rolled back and its runs retried one at a time; a run that still raises fails with
  the error, so one bad run never blocks the others.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from mailbridge.clock import Clock
from mailbridge.engine.conditions import holds
from mailbridge.engine.execution import Execution
from mailbridge.engine.graph import Graph
from mailbridge.engine.ports import AutomationRef, Backend, Event, Transaction
from mailbridge.engine.runs import (
    End,
    Fail,
    Next,
    Outcome,
    Phase,
    Retry,
    Run,
    RunStatus,
    Sleep,
    StepRecord,
    StepStatus,
    Wait,
    record_id,
)
from mailbridge.engine.vocabulary import Vocabulary

logger = logging.getLogger(__name__)

MAX_STEPS_PER_ADVANCE = 200  # more than a graph may hold: a guard, never a limit in practice


@dataclass
class Emitted:
    started: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)


@dataclass
class Progress:
    runs: int = 0
    steps: int = 0

    def __iadd__(self, other: Progress) -> Progress:
        self.runs += other.runs
        self.steps += other.steps
        return self


def _uuid4() -> str:
    return str(uuid.uuid4())


class Engine:
    def __init__(
        self,
        backend: Backend,
        clock: Clock,
        vocabulary: Vocabulary,
        *,
        new_run_id: Callable[[], str] = _uuid4,
    ) -> None:
        self.backend = backend
        self.clock = clock
        self.vocabulary = vocabulary
        self._new_run_id = new_run_id
        self._graphs: dict[tuple[str, int], Graph] = {}  # versions never change

    # -- events -----------------------------------------------------------------------

    async def emit(self, event: Event) -> Emitted:
        async with self.backend.transaction() as tx:
            emitted = await self.emit_in(tx, event)
            await tx.commit()
        return emitted

    async def emit_in(self, tx: Transaction, event: Event) -> Emitted:
        """:meth:`emit` inside the caller's transaction (the caller commits)."""
        now = self.clock.now()
        emitted = Emitted()
        for automation in await tx.automations.triggered_by(event.team_id, event.name):
            run = await self._start(tx, automation, event, now)
            if run is not None:
                emitted.started.append(run.id)
        contacts = {
            contact["id"]: contact
            for contact in await tx.contacts.about(event.team_id, event.contact_id, event.email)
        }
        if contacts:
            for run in await tx.runs.waiting_for(list(contacts), event.name):
                if await self._resume(tx, run, event, contacts.get(run.contact_id or ""), now):
                    emitted.resumed.append(run.id)
        return emitted

    async def _start(
        self, tx: Transaction, automation: AutomationRef, event: Event, now: datetime
    ) -> Run | None:
        contact = await tx.contacts.enroll(automation, event.contact_id, event.email)
        if contact is None:
            return None
        if not automation.allow_reentry and await tx.runs.has_active(automation.id, contact["id"]):
            return None
        graph = await self._graph(tx, automation.id, automation.version)
        run = Run(
            id=self._new_run_id(),
            team_id=automation.team_id,
            automation_id=automation.id,
            version=automation.version,
            contact_id=contact["id"],
            status=RunStatus.RUNNING,
            step_key=graph.first_key,
            phase=Phase.READY,
            due_at=now,
            created_at=now,
            updated_at=now,
            context={"event_name": event.name, "event": dict(event.payload)},
        )
        if run.step_key is None:  # a trigger with nothing after it
            self._finish(run, RunStatus.COMPLETED, now)
        await tx.runs.start(run)
        return run

    async def _resume(
        self,
        tx: Transaction,
        run: Run,
        event: Event,
        contact: dict[str, object] | None,
        now: datetime,
    ) -> bool:
        if run.phase is not Phase.WAITING or run.waiting_event != event.name or not run.step_key:
            return False
        graph = await self._graph(tx, run.automation_id, run.version)
        rule = graph.step(run.step_key).config.get("filter_rule")
        if rule and not holds(rule, {"event": event.payload, "contact": contact or {}}):
            return False
        run.context = {**run.context, "received": {"name": event.name, "payload": event.payload}}
        run.waiting_event = None  # taken: a second event finds it no longer waiting
        run.due_at = now
        run.updated_at = now
        await tx.runs.save(run)
        return True

    # -- advancing runs ---------------------------------------------------------------

    async def run_due(self, limit: int = 100) -> Progress:
        """Advance up to ``limit`` due runs; what was done."""
        try:
            return await self._batch(limit)
        except Exception:
            if limit == 1:
                raise
            logger.exception("a batch of runs failed; retrying its runs one at a time")
        progress = Progress()
        for _ in range(limit):
            claimed: list[str] = []
            try:
                done = await self._batch(1, claimed)
            except Exception as error:
                if not claimed:
                    raise
                logger.exception("run %s failed", claimed[0], extra={"run_id": claimed[0]})
                await self._mark_failed(claimed[0], f"unexpected error: {type(error).__name__}")
                done = Progress(1, 0)
            if done.runs == 0:
                break
            progress += done
        return progress

    async def next_due(self) -> datetime | None:
        """When the earliest running run falls due (for a runner's sleep)."""
        async with self.backend.transaction() as tx:
            return await tx.runs.next_due()

    async def _batch(self, limit: int, claimed: list[str] | None = None) -> Progress:
        now = self.clock.now()
        progress = Progress()
        async with self.backend.transaction() as tx:
            runs = await tx.runs.claim_due(now, limit)
            if claimed is not None:
                claimed.extend(run.id for run in runs)
            for run in runs:
                progress.steps += await self.advance(tx, run, now)
                progress.runs += 1
            await tx.commit()
        return progress

    async def _mark_failed(self, run_id: str, error: str) -> None:
        async with self.backend.transaction() as tx:
            run = await tx.runs.get(run_id)
            if run is not None and run.active:
                run.error = error
                self._finish(run, RunStatus.FAILED, self.clock.now())
                await tx.runs.save(run)
            await tx.commit()

    async def advance(self, tx: Transaction, run: Run, now: datetime) -> int:
        """Take a due run as far as it goes now; the number of steps executed."""
        automation = await tx.automations.get(run.automation_id)
        if automation is None or run.step_key is None:
            self._finish(run, RunStatus.CANCELLED, now)
            await tx.runs.save(run)
            return 0
        graph = await self._graph(tx, run.automation_id, run.version)
        if run.phase is Phase.SLEEPING:
            await self._leave_parked(tx, run, graph, now, StepStatus.COMPLETED, "default", None)
        elif run.phase is Phase.WAITING:
            received = run.context.pop("received", None)
            if received is not None:
                run.context["event_name"] = received["name"]
                run.context["event"] = received["payload"]
                output = {"event": received["name"], "payload": received["payload"]}
                await self._leave_parked(
                    tx, run, graph, now, StepStatus.COMPLETED, "event_received", output
                )
            else:
                await self._leave_parked(tx, run, graph, now, StepStatus.TIMED_OUT, "timeout", None)
        executed = 0
        while self._ready(run, now):
            if executed >= MAX_STEPS_PER_ADVANCE:
                run.error = "too many steps in one go"
                self._finish(run, RunStatus.FAILED, now)
                break
            step = graph.step(run.step_key)
            kind = self.vocabulary.by_stored[step.type]
            outcome = await kind.execute(Execution(run, step, automation, now, tx))
            executed += 1
            run.context["executed"] = sequence = int(run.context.get("executed", 0)) + 1
            record = StepRecord(
                record_id(run.id, step.key), run.id, step.id, step.key, kind.name,
                StepStatus.COMPLETED, now, now, sequence=sequence,
            )  # fmt: skip
            await self._apply(tx, run, graph, record, outcome, now)
        run.updated_at = now
        await tx.runs.save(run)
        return executed

    async def _apply(
        self, tx: Transaction, run: Run, graph: Graph, record: StepRecord, outcome: Outcome,
        now: datetime,
    ) -> None:  # fmt: skip
        match outcome:
            case Next(via=via, output=output, skipped=skipped):
                record.output = output
                record.status = StepStatus.SKIPPED if skipped else StepStatus.COMPLETED
                await tx.runs.record(record)
                self._follow(run, graph, via, now)
            case Sleep(until=until, output=output) | Wait(timeout_at=until, output=output):
                record.status, record.completed_at, record.output = StepStatus.RUNNING, None, output
                await tx.runs.record(record)
                run.phase = Phase.SLEEPING if isinstance(outcome, Sleep) else Phase.WAITING
                run.waiting_event = outcome.event_name if isinstance(outcome, Wait) else None
                run.due_at = until
                run.context["parked_at"] = now.isoformat()
                if output is not None:  # the record is rewritten on leaving: keep what it said
                    run.context["parked_output"] = output
            case End(output=output):
                record.output = output
                await tx.runs.record(record)
                self._finish(run, RunStatus.COMPLETED, now)
            case Fail(error=error):
                record.status, record.error = StepStatus.FAILED, error
                await tx.runs.record(record)
                run.error = f"{record.step_key}: {error}"
                self._finish(run, RunStatus.FAILED, now)
            case Retry(at=at, reason=reason):
                run.due_at = at  # in the future: the loop stops; the same step runs again then
                run.context["retrying"] = reason

    async def _leave_parked(
        self, tx: Transaction, run: Run, graph: Graph, now: datetime, status: StepStatus,
        via: str, output: dict[str, object] | None,
    ) -> None:  # fmt: skip
        assert run.step_key is not None
        step = graph.step(run.step_key)
        parked_at = run.context.pop("parked_at", None)
        started = datetime.fromisoformat(parked_at) if parked_at else now
        parked_output = run.context.pop("parked_output", None)
        output = output if output is not None else parked_output
        kind = self.vocabulary.by_stored[step.type]
        await tx.runs.record(
            StepRecord(
                record_id(run.id, step.key), run.id, step.id, step.key, kind.name, status,
                started, now, output, sequence=int(run.context.get("executed", 0)),
            )
        )  # fmt: skip
        run.waiting_event = None
        self._follow(run, graph, via, now)

    def _follow(self, run: Run, graph: Graph, via: str, now: datetime) -> None:
        assert run.step_key is not None
        target = graph.next_key(run.step_key, via)
        if target is None:
            self._finish(run, RunStatus.COMPLETED, now)
            return
        run.step_key, run.phase, run.due_at = target, Phase.READY, now
        run.context.pop("retrying", None)

    @staticmethod
    def _ready(run: Run, now: datetime) -> bool:
        return (
            run.active
            and run.phase is Phase.READY
            and run.step_key is not None
            and (run.due_at is None or run.due_at <= now)
        )

    @staticmethod
    def _finish(run: Run, status: RunStatus, now: datetime) -> None:
        run.status, run.phase, run.due_at = status, Phase.DONE, None
        run.waiting_event = None
        run.completed_at = run.updated_at = now
        run.context.pop("parked_at", None)
        run.context.pop("parked_output", None)

    async def _graph(self, tx: Transaction, automation_id: str, version: int) -> Graph:
        key = (automation_id, version)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = await tx.automations.graph(automation_id, version)
        return graph
