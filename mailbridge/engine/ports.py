"""The ports the engine needs, documented here once; implementations repeat nothing.

The engine reads and writes the world only through a :class:`Transaction`, opened by
a :class:`Backend`: everything a transaction did is committed together or not at all
— a run's state change, its step record, the email its send step created, the
contact its update step changed. ``mailbridge.engine.memory`` implements the ports in
memory (unit tests, embedding); ``mailbridge.services.automations._backend`` implements
them on the database.

Contacts cross the ports as plain dicts: ``{id, audience_id, email, first_name,
last_name, unsubscribed, properties}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from mailbridge.engine.graph import Graph
from mailbridge.engine.runs import Outcome, Run, StepRecord

if TYPE_CHECKING:
    from mailbridge.engine.execution import Execution

Contact = dict[str, Any]


class RunQuotaExceeded(Exception):
    """:meth:`Runs.start` refused: the team used every run of its rolling 30 days."""


class SendRefused(Exception):
    """:meth:`Mailer.send` will not send: skip the step (``skip``), try again at
    ``retry_at`` (a quota), or fail the run (neither)."""

    def __init__(
        self, reason: str, *, skip: bool = False, retry_at: datetime | None = None
    ) -> None:
        super().__init__(reason)
        self.reason, self.skip, self.retry_at = reason, skip, retry_at


@dataclass(frozen=True)
class AutomationRef:
    """What the engine needs to know of an automation to start a run of it."""

    id: str
    team_id: str
    audience_id: str
    domain: str
    version: int
    trigger_event: str
    allow_reentry: bool = False


@dataclass(frozen=True)
class Event:
    """Something that happened to a contact: a custom event or a built-in one. An
    embedding program emits its own; mailbridge's come from ``mailbridge.triggers``
    (activity it records, and ``POST /events/send``), where the whole path is mapped."""

    team_id: str
    name: str
    contact_id: str | None = None
    email: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OutgoingEmail:
    """An email a send step asks for; ``key`` is unique per run and step, so asking twice
    sends once."""

    key: str
    team_id: str
    automation_id: str
    run_id: str
    domain: str
    from_address: str
    to: str
    subject: str
    html: str | None
    text: str | None
    reply_to: str | list[str] | None
    template_id: str | None
    variables: dict[str, Any]
    contact: Contact  # the recipient, for contact.* placeholders


class Automations(Protocol):
    async def triggered_by(self, team_id: str, event_name: str) -> list[AutomationRef]:
        """The team's enabled automations whose trigger is ``event_name``."""
        ...

    async def get(self, automation_id: str) -> AutomationRef | None:
        """The automation as it is now (its current version), or None when deleted."""
        ...

    async def graph(self, automation_id: str, version: int) -> Graph:
        """The stored-vocabulary graph of one version (versions never change)."""
        ...


class Runs(Protocol):
    async def claim_due(self, now: datetime, limit: int) -> list[Run]:
        """Up to ``limit`` running runs due at ``now``, oldest due first, held by this
        transaction until it ends: no other transaction claims them meanwhile."""
        ...

    async def get(self, run_id: str) -> Run | None:
        """One run, held like :meth:`claim_due`'s."""
        ...

    async def waiting_for(self, contact_ids: list[str], event_name: str) -> list[Run]:
        """Running runs of these contacts parked on a wait for ``event_name``, held like
        :meth:`claim_due`'s."""
        ...

    async def has_active(self, automation_id: str, contact_id: str) -> bool:
        """Whether the contact has a running run in the automation."""
        ...

    async def start(self, run: Run) -> None:
        """Store a new run; raises :class:`RunQuotaExceeded` past the team's plan."""
        ...

    async def save(self, run: Run) -> None:
        """Store the run's new state (status, phase, step, due time, context)."""
        ...

    async def record(self, record: StepRecord) -> None:
        """Store a step's record, replacing the one with the same id."""
        ...

    async def next_due(self) -> datetime | None:
        """The earliest ``due_at`` of a running run, for the runner's sleep."""
        ...


class Contacts(Protocol):
    async def find(self, team_id: str, contact_id: str) -> Contact | None: ...

    async def about(self, team_id: str, contact_id: str | None, email: str | None) -> list[Contact]:
        """The contacts an event is about: the one with ``contact_id``, else every contact
        of the team with ``email`` (one per audience)."""
        ...

    async def enroll(
        self, automation: AutomationRef, contact_id: str | None, email: str | None
    ) -> Contact | None:
        """The contact of the automation's audience the event names — by id, or by
        address, created when the address is new — or None."""
        ...

    async def update(
        self, team_id: str, contact_id: str, changes: dict[str, Any]
    ) -> Contact | None:
        """Apply ``changes`` (first_name, last_name, unsubscribed, properties merged)."""
        ...

    async def delete(self, team_id: str, contact_id: str) -> bool: ...

    async def add_to_segment(self, team_id: str, segment_id: str, contact_id: str) -> bool:
        """Make the contact an explicit member; False when the segment is gone."""
        ...


class Mailer(Protocol):
    async def send(self, email: OutgoingEmail) -> str:
        """Queue the email for delivery and answer its id; the same ``key`` answers the
        same id without a second email. Raises :class:`SendRefused`."""
        ...


class Inboxes(Protocol):
    async def act(
        self, team_id: str, thread_id: str, action: str, options: Mapping[str, Any]
    ) -> str | None:
        """Apply an inbox step's ``action`` (``add_labels``, ``archive``, ``mark_as_spam``,
        ``move_to_trash``, ``assign_thread``, ``draft_reply``, ``forward_thread``: then
        ``options["key"]`` makes the forward's email once) to the team's thread, in the
        transaction; None when done, else why it could not be (the thread is gone, ...)."""
        ...


class Transaction(Protocol):
    @property
    def automations(self) -> Automations: ...
    @property
    def runs(self) -> Runs: ...
    @property
    def contacts(self) -> Contacts: ...
    @property
    def mailer(self) -> Mailer: ...
    @property
    def inboxes(self) -> Inboxes: ...

    async def commit(self) -> None: ...


class Backend(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        """A unit of work; leaving it without :meth:`Transaction.commit` rolls back."""
        ...


@dataclass(frozen=True)
class TemplateContent:
    """A published template, as a send step snapshots it when the graph is written."""

    id: str
    from_address: str | None
    subject: str | None
    html: str | None
    text: str | None
    reply_to: str | list[str] | None = None


class References(Protocol):
    """What validating and storing a graph looks up (loaded beforehand: sync)."""

    @property
    def domain(self) -> str | None:
        """The automation's sending domain; a send step's ``from`` must be on it."""
        ...

    def template(self, template_id: str) -> TemplateContent | None:
        """The published template with this id (or alias), or None."""
        ...

    def segment_exists(self, segment_id: str) -> bool: ...


class StepKind(Protocol):
    """A step type the engine can check, convert and execute (``mailbridge.steps`` holds
    the built-in ones; an embedding program may add its own). The engine knows the kinds
    only through the :class:`~mailbridge.engine.vocabulary.Vocabulary` it is given."""

    @property
    def name(self) -> str:
        """The type's name in the public vocabulary (``send_email``)."""
        ...

    @property
    def stored_name(self) -> str:
        """The type's name in the stored vocabulary (``send``)."""
        ...

    @property
    def edges(self) -> frozenset[str]:
        """The connection types that may leave a step of this type (none: the run ends
        there). A kind may bring types of its own (``high``, ``approved``): a vocabulary's
        connection types are its kinds' edges and ``default``. :meth:`execute` names the
        one to follow in :class:`~mailbridge.engine.runs.Next`."""
        ...

    def check(self, config: object, references: References) -> list[str]:
        """Problems with a public config, one line each (empty: valid)."""
        ...

    def to_stored(self, config: Mapping[str, Any], references: References) -> dict[str, Any]:
        """A checked public config in the stored vocabulary."""
        ...

    def to_public(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A stored config in the public vocabulary."""
        ...

    async def execute(self, execution: Execution) -> Outcome:
        """Run one step of one run inside the engine's transaction; what happens next."""
        ...
