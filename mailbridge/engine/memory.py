"""The engine's ports in memory: for unit tests and for programs that embed the engine.

Everything lives in plain dicts on :class:`MemoryBackend`; a transaction is the
backend itself. Writes are applied as they happen and are not rolled back when a
transaction fails (there is no I/O that could fail half-way here).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from mailbridge.engine.graph import Graph
from mailbridge.engine.ports import (
    AutomationRef,
    Contact,
    OutgoingEmail,
    RunQuotaExceeded,
    TemplateContent,
)
from mailbridge.engine.runs import Phase, Run, RunStatus, StepRecord


@dataclass
class MemoryReferences:
    domain: str | None = None
    templates: dict[str, TemplateContent] = field(default_factory=dict)
    segments: set[str] = field(default_factory=set)

    def template(self, template_id: str) -> TemplateContent | None:
        return self.templates.get(template_id)

    def segment_exists(self, segment_id: str) -> bool:
        return segment_id in self.segments


@dataclass
class SentEmail:
    id: str
    email: OutgoingEmail


class MemoryAutomations:
    def __init__(self) -> None:
        self.refs: dict[str, AutomationRef] = {}
        self.graphs: dict[tuple[str, int], Graph] = {}
        self.enabled: set[str] = set()

    async def triggered_by(self, team_id: str, event_name: str) -> list[AutomationRef]:
        return [
            ref
            for ref in self.refs.values()
            if ref.id in self.enabled and ref.team_id == team_id and ref.trigger_event == event_name
        ]

    async def get(self, automation_id: str) -> AutomationRef | None:
        return self.refs.get(automation_id)

    async def graph(self, automation_id: str, version: int) -> Graph:
        return self.graphs[(automation_id, version)]


class MemoryRuns:
    def __init__(self, run_quota: int | None = None) -> None:
        self.runs: dict[str, Run] = {}
        self.records: dict[str, StepRecord] = {}
        self.run_quota = run_quota

    async def claim_due(self, now: datetime, limit: int) -> list[Run]:
        due = [
            run
            for run in self.runs.values()
            if run.active and run.due_at is not None and run.due_at <= now
        ]
        due.sort(key=lambda run: (run.due_at or now, run.id))
        return [copy.deepcopy(run) for run in due[:limit]]

    async def get(self, run_id: str) -> Run | None:
        run = self.runs.get(run_id)
        return copy.deepcopy(run) if run is not None else None

    async def waiting_for(self, contact_ids: list[str], event_name: str) -> list[Run]:
        wanted = set(contact_ids)
        return [
            copy.deepcopy(run)
            for run in self.runs.values()
            if run.active
            and run.phase is Phase.WAITING
            and run.waiting_event == event_name
            and run.contact_id in wanted
        ]

    async def has_active(self, automation_id: str, contact_id: str) -> bool:
        return any(
            run.active and run.automation_id == automation_id and run.contact_id == contact_id
            for run in self.runs.values()
        )

    async def start(self, run: Run) -> None:
        if self.run_quota is not None and len(self.runs) >= self.run_quota:
            raise RunQuotaExceeded(f"the plan allows {self.run_quota} runs")
        self.runs[run.id] = copy.deepcopy(run)

    async def save(self, run: Run) -> None:
        self.runs[run.id] = copy.deepcopy(run)

    async def record(self, record: StepRecord) -> None:
        self.records[record.id] = copy.deepcopy(record)

    async def next_due(self) -> datetime | None:
        dues = [run.due_at for run in self.runs.values() if run.active and run.due_at is not None]
        return min(dues, default=None)

    def steps_of(self, run_id: str) -> list[StepRecord]:
        return sorted(
            (record for record in self.records.values() if record.run_id == run_id),
            key=lambda record: record.sequence,
        )


class MemoryContacts:
    def __init__(self) -> None:
        self.contacts: dict[str, Contact] = {}
        self.segments: dict[str, set[str]] = {}
        self.team_of: dict[str, str] = {}  # contact id -> team id

    def add(
        self, team_id: str, audience_id: str, email: str, *, contact_id: str | None = None,
        **fields: Any,
    ) -> Contact:  # fmt: skip
        contact: Contact = {
            "id": contact_id or str(uuid.uuid4()), "audience_id": audience_id,
            "email": email.lower(), "first_name": None, "last_name": None,
            "unsubscribed": False, "properties": {}, **fields,
        }  # fmt: skip
        self.contacts[contact["id"]] = contact
        self.team_of[contact["id"]] = team_id
        return copy.deepcopy(contact)

    def _of_team(self, team_id: str) -> list[Contact]:
        return [c for c in self.contacts.values() if self.team_of[c["id"]] == team_id]

    async def find(self, team_id: str, contact_id: str) -> Contact | None:
        contact = self.contacts.get(contact_id)
        if contact is None or self.team_of[contact_id] != team_id:
            return None
        return copy.deepcopy(contact)

    async def about(self, team_id: str, contact_id: str | None, email: str | None) -> list[Contact]:
        if contact_id is not None:
            found = await self.find(team_id, contact_id)
            return [found] if found else []
        wanted = (email or "").lower()
        return [copy.deepcopy(c) for c in self._of_team(team_id) if c["email"] == wanted]

    async def enroll(
        self, automation: AutomationRef, contact_id: str | None, email: str | None
    ) -> Contact | None:
        if contact_id is not None:
            named = await self.find(automation.team_id, contact_id)
            if named is None:
                return None
            email, created = named["email"], False
        else:
            created = True
        for contact in self._of_team(automation.team_id):
            if contact["audience_id"] == automation.audience_id and contact["email"] == email:
                return copy.deepcopy(contact)
        if not created or not email:
            return None
        return self.add(automation.team_id, automation.audience_id, email)

    async def update(
        self, team_id: str, contact_id: str, changes: dict[str, Any]
    ) -> Contact | None:
        contact = self.contacts.get(contact_id)
        if contact is None or self.team_of[contact_id] != team_id:
            return None
        for name, value in changes.items():
            if name == "properties":
                contact["properties"] = {**contact["properties"], **(value or {})}
            else:
                contact[name] = value
        return copy.deepcopy(contact)

    async def delete(self, team_id: str, contact_id: str) -> bool:
        if self.team_of.get(contact_id) != team_id:
            return False
        self.contacts.pop(contact_id, None)
        for members in self.segments.values():
            members.discard(contact_id)
        return True

    async def add_to_segment(self, team_id: str, segment_id: str, contact_id: str) -> bool:
        if segment_id not in self.segments:
            return False
        self.segments[segment_id].add(contact_id)
        return True


class MemoryMailer:
    def __init__(self) -> None:
        self.sent: dict[str, SentEmail] = {}  # by key

    async def send(self, email: OutgoingEmail) -> str:
        if email.key not in self.sent:
            self.sent[email.key] = SentEmail(str(uuid.uuid4()), email)
        return self.sent[email.key].id


class MemoryInboxes:
    """The inbox actions steps took, in order (threads are always there)."""

    def __init__(self) -> None:
        self.actions: list[tuple[str, str, str, dict[str, Any]]] = []

    async def act(
        self, team_id: str, thread_id: str, action: str, options: Mapping[str, Any]
    ) -> str | None:
        self.actions.append((team_id, thread_id, action, dict(options)))
        return None


class MemoryBackend:
    """All ports in memory; also the transaction (``commit`` does nothing)."""

    def __init__(self, *, run_quota: int | None = None) -> None:
        self.automations = MemoryAutomations()
        self.runs = MemoryRuns(run_quota)
        self.contacts = MemoryContacts()
        self.mailer = MemoryMailer()
        self.inboxes = MemoryInboxes()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[MemoryBackend]:
        yield self

    async def commit(self) -> None:
        return None

    def add_automation(
        self, graph: Graph, *, team_id: str, audience_id: str, domain: str,
        automation_id: str | None = None, enabled: bool = True, allow_reentry: bool = False,
    ) -> AutomationRef:  # fmt: skip
        """Register (or re-version) an automation whose graph ``build`` produced."""
        automation_id = automation_id or str(uuid.uuid4())
        current = self.automations.refs.get(automation_id)
        version = current.version + 1 if current is not None else 1
        ref = AutomationRef(
            automation_id, team_id, audience_id, domain, version, graph.trigger.event_name,
            allow_reentry,
        )  # fmt: skip
        self.automations.refs[automation_id] = ref
        self.automations.graphs[(automation_id, version)] = graph
        (self.automations.enabled.add if enabled else self.automations.enabled.discard)(
            automation_id
        )
        return ref

    def stop(self, automation_id: str, now: datetime) -> int:
        """Disable the automation and cancel its active runs; how many were cancelled."""
        self.automations.enabled.discard(automation_id)
        cancelled = 0
        for run_id, run in list(self.runs.runs.items()):
            if run.automation_id == automation_id and run.active:
                self.runs.runs[run_id] = replace(
                    run, status=RunStatus.CANCELLED, phase=Phase.DONE, due_at=None,
                    waiting_event=None, completed_at=now, updated_at=now,
                )  # fmt: skip
                cancelled += 1
        return cancelled

    def add_segment(self, segment_id: str) -> None:
        self.contacts.segments.setdefault(segment_id, set())

    @property
    def sent(self) -> list[SentEmail]:
        return list(self.mailer.sent.values())
