"""Built-in events (contact.created, email.opened, ...) start and resume runs: the SQL
half of ``mailbridge.triggers.activity``.

An activity consumer: the activity dispatcher hands it each batch of new activity
events inside its transaction, and the engine's starts and resumes commit with the
batch's "dispatched" mark — once each. What an activity row means to automations (the
names worth a lookup, the events a row stands for, the quota) is the triggers
package's; here are its ports on the dispatcher's session: the enabled automations
(:class:`SQLListeners`) and one engine transaction per key domain that caused activity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.engine import Engine
from mailbridge.engine.graph import Graph
from mailbridge.services.automations._backend import SQLTransaction, sql_engine
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ActivityEvent, Automation, AutomationVersion
from mailbridge.triggers import ListenedNames, Listener, emit_activity


class SQLListeners:
    """The enabled automations with the graphs of all their versions."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def enabled(self) -> list[Listener]:
        enabled = select(Automation.id, Automation.team_id, Automation.trigger_event).where(
            Automation.status == "enabled"
        )
        automations = {row.id: row for row in await self.session.execute(enabled)}
        graphs: dict[str, list[Graph]] = {automation_id: [] for automation_id in automations}
        if automations:
            versions = await self.session.execute(
                select(AutomationVersion.automation_id, AutomationVersion.graph).where(
                    AutomationVersion.automation_id.in_(list(automations))
                )
            )
            for automation_id, graph in versions:
                graphs[automation_id].append(Graph.from_dict(graph))
        return [
            Listener(row.team_id, row.trigger_event, tuple(graphs[automation_id]))
            for automation_id, row in automations.items()
        ]


class BuiltInTriggers:
    """The activity consumer that feeds built-in events to the engine."""

    name = "automations"

    def __init__(self, on_runs: Callable[[], None] | None = None) -> None:
        self._names = ListenedNames()
        self._engine: Engine | None = None
        self._on_runs = on_runs
        self._touched = False

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        wanted = await self._names.wanted(SQLListeners(session), events)
        if not wanted:
            return
        if self._engine is None:
            self._engine = sql_engine(context)
        transactions: dict[str | None, SQLTransaction] = {}
        for activity in wanted:
            # Activity a domain-limited key caused reaches only that domain's automations.
            scope = activity.scope_domain
            if scope not in transactions:
                transactions[scope] = SQLTransaction(session, context, domain=scope)
            touched = await emit_activity(self._engine, transactions[scope], activity)
            self._touched = self._touched or touched
        for tx in transactions.values():
            await tx.flush()

    def dispatched(self) -> None:
        if self._touched and self._on_runs is not None:
            self._on_runs()
        self._touched = False


def built_in_triggers(context: ServiceContext) -> BuiltInTriggers:
    """The consumer the activity dispatcher runs (registered with the webhooks context by
    this context's face): runs started or resumed give the automation worker work, and
    the dispatcher their ``automation.run.started`` events."""
    return BuiltInTriggers(on_runs=lambda: context.work_added("automations", "activity"))
