"""The engine's ports on the database: one :class:`SQLTransaction` is one session.

Claims hold their runs for the whole transaction: ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL (two runners take disjoint batches; a crashed runner's locks vanish with
its connection), and on SQLite the transaction starts with a write, so it holds the
single write lock before it reads the batch. Because a batch's state changes, step
records, emails and contact changes commit together, a run killed at any instant
repeats nothing anyone can see.

Writes of runs and step records are buffered and sent with one statement a table at
commit (executemany): the engine's throughput is bounded by the database's commit
rate over *batches*, not steps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.engine import Engine
from mailbridge.engine.graph import Graph
from mailbridge.engine.ports import AutomationRef, RunQuotaExceeded, SendRefused
from mailbridge.engine.runs import Phase, Run, RunStatus, StepRecord
from mailbridge.services import inboxes
from mailbridge.services.accounts import lock_teams, plan_named
from mailbridge.services.automations._contacts import SQLContacts
from mailbridge.services.automations._mailer import SQLMailer
from mailbridge.services.kernel import ServiceContext
from mailbridge.steps import VOCABULARY
from mailbridge.storage import bulk
from mailbridge.storage.queries import is_postgres, locked, table_of
from mailbridge.storage.tables import (
    ActivityEvent,
    Automation,
    AutomationRun,
    AutomationRunStep,
    AutomationVersion,
    Team,
)
from mailbridge.storage.types import new_id

RUN_WINDOW = timedelta(days=30)
_RUN_COLUMNS = (
    "status", "step_key", "phase", "due_at", "waiting_event", "context", "error",
    "updated_at", "completed_at",
)  # fmt: skip


_STATUSES = {status.value: status for status in RunStatus}
_PHASES = {phase.value: phase for phase in Phase}


def run_of(row: Any) -> Run:
    """A run from its row (an ORM object or a Core row: both answer by column name)."""
    return Run(
        id=row.id, team_id=row.team_id, automation_id=row.automation_id, version=row.version,
        contact_id=row.contact_id, status=RunStatus(row.status), step_key=row.step_key,
        phase=Phase(row.phase), due_at=row.due_at, created_at=row.created_at,
        updated_at=row.updated_at, waiting_event=row.waiting_event,
        context=dict(row.context or {}), error=row.error, completed_at=row.completed_at,
    )  # fmt: skip


def _run_values(run: Run) -> dict[str, Any]:
    return {
        "status": run.status.value, "step_key": run.step_key, "phase": run.phase.value,
        "due_at": run.due_at, "waiting_event": run.waiting_event, "context": run.context,
        "error": run.error, "updated_at": run.updated_at, "completed_at": run.completed_at,
    }  # fmt: skip


def automation_ref(row: Any) -> AutomationRef:
    """The engine's view of an automation (an ORM object or a Core row)."""
    config = row.trigger_config or {}
    return AutomationRef(
        row.id, row.team_id, row.audience_id, row.domain, row.version, row.trigger_event,
        bool(config.get("allow_reentry")),
    )  # fmt: skip


def run_event_data(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "automation_id": run.automation_id,
        "contact_id": run.contact_id,
        "status": run.status.value,
    }


class SQLAutomations:
    def __init__(self, session: AsyncSession, domain: str | None = None) -> None:
        self.session = session
        self._domain = domain
        self._refs: dict[str, AutomationRef | None] = {}

    async def triggered_by(self, team_id: str, event_name: str) -> list[AutomationRef]:
        query = select(Automation).where(
            Automation.team_id == team_id,
            Automation.trigger_event == event_name,
            Automation.status == "enabled",
        )
        if self._domain is not None:
            query = query.where(Automation.domain == self._domain)
        return [automation_ref(row) for row in await self.session.scalars(query)]

    async def get(self, automation_id: str) -> AutomationRef | None:
        if automation_id not in self._refs:
            # Core, not the ORM: once a batch, where an ORM load cost as much as a run.
            table = table_of(Automation)
            row = (
                await self.session.execute(select(table).where(table.c.id == automation_id))
            ).first()
            self._refs[automation_id] = automation_ref(row) if row is not None else None
        return self._refs[automation_id]

    async def graph(self, automation_id: str, version: int) -> Graph:
        row = await self.session.get(AutomationVersion, (automation_id, version))
        if row is None:
            raise LookupError(f"automation {automation_id} has no version {version}")
        return Graph.from_dict(row.graph)


class SQLRuns:
    def __init__(
        self,
        session: AsyncSession,
        now: Callable[[], datetime],
        on_claim: Callable[[list[str]], None] = lambda contact_ids: None,
        domain: str | None = None,
    ) -> None:
        self.session = session
        self._now = now
        self._on_claim = on_claim
        self._domain = domain
        self._new: dict[str, dict[str, Any]] = {}  # runs started in this transaction
        self._changed: dict[str, dict[str, Any]] = {}
        self._was_active: dict[str, bool] = {}
        self._records: dict[str, dict[str, Any]] = {}
        self._activity: list[dict[str, Any]] = []
        self._allowance: dict[str, int | None] = {}  # runs a team may still start

    def _claimed(self, rows: Sequence[Any]) -> list[Run]:
        return self._hold([run_of(row) for row in rows])

    def _hold(self, runs: list[Run]) -> list[Run]:
        runs.sort(key=lambda run: (run.due_at, run.id))
        for run in runs:
            self._was_active[run.id] = run.active
        self._on_claim([run.contact_id for run in runs if run.contact_id])
        return runs

    async def claim_due(self, now: datetime, limit: int) -> list[Run]:
        table = table_of(AutomationRun)
        if is_postgres(self.session):
            due = (
                select(AutomationRun.id)
                .where(AutomationRun.status == "running", AutomationRun.due_at <= now)
                .order_by(AutomationRun.due_at)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
            result = await self.session.execute(
                select(table).where(table.c.id.in_(due.scalar_subquery()))
            )
            # Core rows, not ORM objects: a batch is read once, written with bulk statements.
            return self._claimed(result.all())
        # SQLite: a write first (one that changes nothing), so the transaction holds the
        # database's single write lock from here on; then the batch is read with raw SQL,
        # because reading it through SQLAlchemy cost as much as advancing it.
        await self.session.execute(text("UPDATE automation_runs SET id = id WHERE 0"))
        columns = ", ".join(column.name for column in table.c)
        rows = await bulk.sqlite_rows(
            self.session, table,
            f"SELECT {columns} FROM automation_runs WHERE status = 'running' AND due_at <= ?"
            " ORDER BY due_at LIMIT ?",
            (bulk.sqlite_stamp(now), limit),
        )  # fmt: skip
        for row in rows:  # the columns are the run's fields
            row["status"], row["phase"] = _STATUSES[row["status"]], _PHASES[row["phase"]]
            row["context"] = row["context"] or {}
        return self._hold([Run(**row) for row in rows])

    async def get(self, run_id: str) -> Run | None:
        query = select(AutomationRun).where(AutomationRun.id == run_id)
        row = await self.session.scalar(locked(query, self.session))
        return self._claimed([row])[0] if row is not None else None

    async def waiting_for(self, contact_ids: list[str], event_name: str) -> list[Run]:
        query = select(AutomationRun).where(
            AutomationRun.contact_id.in_(contact_ids),
            AutomationRun.waiting_event == event_name,
            AutomationRun.status == "running",
        )
        if self._domain is not None:
            on_domain = select(Automation.id).where(Automation.domain == self._domain)
            query = query.where(AutomationRun.automation_id.in_(on_domain))
        return self._claimed(list(await self.session.scalars(locked(query, self.session))))

    async def has_active(self, automation_id: str, contact_id: str) -> bool:
        if any(
            row["automation_id"] == automation_id
            and row["contact_id"] == contact_id
            and row["status"] == "running"
            for row in self._new.values()
        ):
            return True
        found = await self.session.scalar(
            select(AutomationRun.id)
            .where(
                AutomationRun.automation_id == automation_id,
                AutomationRun.contact_id == contact_id,
                AutomationRun.status == "running",
            )
            .limit(1)
        )
        return found is not None

    async def _charge(self, team_id: str) -> None:
        if team_id not in self._allowance:
            await lock_teams(self.session, [team_id])
            plan = plan_named(
                await self.session.scalar(select(Team.plan).where(Team.id == team_id)) or "free"
            )
            cap = plan.monthly_automation_runs
            if cap is None:
                self._allowance[team_id] = None
            else:
                used = await self.session.scalar(
                    select(func.count())
                    .select_from(AutomationRun)
                    .where(
                        AutomationRun.team_id == team_id,
                        AutomationRun.created_at > self._now() - RUN_WINDOW,
                    )
                )
                self._allowance[team_id] = cap - int(used or 0)
        left = self._allowance[team_id]
        if left is not None:
            if left <= 0:
                raise RunQuotaExceeded("every automation run of the rolling 30 days is used")
            self._allowance[team_id] = left - 1

    async def start(self, run: Run) -> None:
        await self._charge(run.team_id)
        self._new[run.id] = {
            "id": run.id, "team_id": run.team_id, "automation_id": run.automation_id,
            "version": run.version, "contact_id": run.contact_id, "created_at": run.created_at,
            **_run_values(run),
        }  # fmt: skip
        self._was_active[run.id] = True
        self._event(run, "automation.run.started")
        if not run.active:
            self._event(run, f"automation.run.{run.status.value}")

    async def save(self, run: Run) -> None:
        values = _run_values(run)
        if run.id in self._new:
            self._new[run.id].update(values)
        else:
            self._changed[run.id] = {"id": run.id, **values}
        if self._was_active.get(run.id) and not run.active:
            self._event(run, f"automation.run.{run.status.value}")
        self._was_active[run.id] = run.active

    async def record(self, record: StepRecord) -> None:
        self._records[record.id] = {
            "id": record.id, "run_id": record.run_id, "step_id": record.step_id,
            "step_key": record.step_key, "sequence": record.sequence, "type": record.type,
            "status": record.status.value,
            "started_at": record.started_at, "completed_at": record.completed_at,
            "output": record.output, "error": record.error,
        }  # fmt: skip

    @property
    def touched(self) -> bool:
        """Whether runs were started or changed (and not yet flushed)."""
        return bool(self._new or self._changed)

    @property
    def has_activity(self) -> bool:
        return bool(self._activity)

    async def next_due(self) -> datetime | None:
        return await self.session.scalar(
            select(func.min(AutomationRun.due_at)).where(AutomationRun.status == "running")
        )

    def _event(self, run: Run, type: str) -> None:
        self._activity.append(
            {
                "id": new_id(), "team_id": run.team_id, "type": type,
                "data": run_event_data(run), "created_at": self._now(),
            }
        )  # fmt: skip

    async def flush(self) -> None:
        session = self.session
        await bulk.insert_rows(session, table_of(AutomationRun), list(self._new.values()))
        await bulk.update_rows(
            session, table_of(AutomationRun), list(self._changed.values()), _RUN_COLUMNS
        )
        await bulk.upsert_rows(
            session, table_of(AutomationRunStep), list(self._records.values()),
            ("status", "completed_at", "output", "error"), key=("run_id", "step_key"),
        )  # fmt: skip
        await bulk.insert_rows(session, table_of(ActivityEvent), self._activity)
        self._new, self._changed, self._records, self._activity = {}, {}, {}, []


class SQLInboxes:
    """The engine's ``Inboxes`` port: inbox steps act in the run's transaction (a
    forward's email is the mailer's, stored at commit with the rest)."""

    def __init__(
        self, session: AsyncSession, context: ServiceContext, mailer: SQLMailer,
        *, source: str = "system",
    ) -> None:  # fmt: skip
        self.session = session
        self.context = context
        self.mailer = mailer
        self.source = source

    async def act(
        self, team_id: str, thread_id: str, action: str, options: Mapping[str, Any]
    ) -> str | None:
        if action != "forward_thread":
            return await inboxes.act_on_thread(
                self.session, self.context.clock, team_id, thread_id, action, options,
                source=self.source,
            )  # fmt: skip
        payload = await inboxes.thread_forward(
            self.session, self.context.settings.data_dir, team_id, thread_id, options
        )
        if isinstance(payload, str):
            return payload
        try:
            await self.mailer.send_composed(team_id, str(options["key"]), payload)
        except SendRefused as refused:
            return refused.reason
        return None


class SQLTransaction:
    """With ``domain``, events start and resume only the automations of that domain (an
    automation's send steps all send from its domain: the graph check makes sure), and a
    contact an enrolment makes is news (``contact.created``) for that domain's only."""

    def __init__(
        self, session: AsyncSession, context: ServiceContext, *, domain: str | None = None
    ) -> None:
        self.session = session
        self.context = context
        self.automations = SQLAutomations(session, domain)
        self.contacts = SQLContacts(session, context, domain)
        self.runs = SQLRuns(session, context.clock.now, self.contacts.expect, domain)
        self.mailer = SQLMailer(session, context)
        self.inboxes = SQLInboxes(session, context, self.mailer)

    async def flush(self) -> bool:
        """Send the buffered writes (inside the transaction); whether emails were stored."""
        await self.contacts.flush()
        await self.runs.flush()
        return await self.mailer.flush()

    async def commit(self) -> None:
        woken = self._workers_to_wake()
        if await self.flush():
            woken.append("delivery")
        await self.session.commit()
        if woken:
            self.context.work_added(*woken)

    def _workers_to_wake(self) -> list[str]:
        """The runner's workers with new work once this commits (emails: see flush)."""
        woken = []
        if self.runs.touched:
            woken.append("automations")
        if self.runs.has_activity or self.contacts.has_activity:
            woken.append("activity")
        return woken


class SQLBackend:
    """The engine's backend on mailbridge's database (``domain``: see SQLTransaction)."""

    def __init__(self, context: ServiceContext, *, domain: str | None = None) -> None:
        self.context = context
        self.domain = domain

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SQLTransaction]:
        async with self.context.database.session() as session:
            yield SQLTransaction(session, self.context, domain=self.domain)


def sql_engine(context: ServiceContext) -> Engine:
    """The engine on mailbridge's database; run ids are UUIDv7, like every other id."""
    return Engine(SQLBackend(context), context.clock, VOCABULARY, new_run_id=new_id)
