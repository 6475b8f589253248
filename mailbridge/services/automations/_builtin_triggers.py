"""Built-in events (contact.created, email.opened, ...) start and resume runs.

An activity consumer: the activity dispatcher hands it each batch of new activity
events inside its transaction, and the engine's starts and resumes commit with the
batch's "dispatched" mark — once each. Only event names some enabled automation
uses (as its trigger or in a wait step of any of its versions) cost a lookup; the
set is cached for a couple of seconds. Run events (``automation.*``) never trigger,
so an automation cannot feed itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.engine import Engine
from mailbridge.engine.graph import Graph
from mailbridge.engine.ports import Event, RunQuotaExceeded
from mailbridge.services.automations._backend import SQLTransaction, sql_engine
from mailbridge.services.context import ServiceContext
from mailbridge.storage.tables import ActivityEvent, Automation, AutomationVersion

logger = logging.getLogger(__name__)

NAMES_TTL = 2.0


def events_of(activity: ActivityEvent) -> Iterable[Event]:
    """The engine events an activity row stands for: one per contact it is about."""
    data: dict[str, Any] = dict(activity.data or {})
    if activity.type.startswith("contact."):
        yield Event(activity.team_id, activity.type, contact_id=data.get("id"), payload=data)
    elif activity.type.startswith("email."):
        for address in data.get("to") or []:
            yield Event(activity.team_id, activity.type, email=str(address).lower(), payload=data)
    elif activity.type.startswith("poll."):
        # A vote is about its contact, or about the address the mail went to.
        team_id, name = activity.team_id, activity.type
        if data.get("contact_id"):
            yield Event(team_id, name, contact_id=str(data["contact_id"]), payload=data)
        elif data.get("email"):
            yield Event(team_id, name, email=str(data["email"]), payload=data)


class BuiltInTriggers:
    """The activity consumer that feeds built-in events to the engine."""

    name = "automations"

    def __init__(self, on_runs: Callable[[], None] | None = None) -> None:
        self._names: set[tuple[str, str]] = set()
        self._loaded_at = float("-inf")
        self._engine: Engine | None = None
        self._on_runs = on_runs
        self._touched = False

    async def _names_in_use(self, session: AsyncSession) -> set[tuple[str, str]]:
        if time.monotonic() - self._loaded_at > NAMES_TTL:
            names: set[tuple[str, str]] = set()
            enabled = select(Automation.id, Automation.team_id, Automation.trigger_event).where(
                Automation.status == "enabled"
            )
            teams: dict[str, str] = {}
            for automation_id, team_id, trigger in await session.execute(enabled):
                names.add((team_id, trigger))
                teams[automation_id] = team_id
            if teams:
                versions = await session.execute(
                    select(AutomationVersion.automation_id, AutomationVersion.graph).where(
                        AutomationVersion.automation_id.in_(list(teams))
                    )
                )
                for automation_id, graph in versions:
                    for step in Graph.from_dict(graph).steps:
                        if step.type == "wait":
                            names.add((teams[automation_id], str(step.config["event_name"])))
            self._names, self._loaded_at = names, time.monotonic()
        return self._names

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        names = await self._names_in_use(session)
        wanted = [event for event in events if (event.team_id, event.type) in names]
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
            tx = transactions[scope]
            for event in events_of(activity):
                try:
                    emitted = await self._engine.emit_in(tx, event)
                except RunQuotaExceeded:
                    logger.warning("team %s: automation run quota used up", event.team_id)
                    continue
                self._touched = self._touched or bool(emitted.started or emitted.resumed)
        for tx in transactions.values():
            await tx.flush()

    def dispatched(self) -> None:
        if self._touched and self._on_runs is not None:
            self._on_runs()
        self._touched = False
