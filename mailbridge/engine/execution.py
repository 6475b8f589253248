"""One step of one run being executed: what a :class:`~mailbridge.engine.ports.StepKind`
is handed by the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mailbridge.engine.graph import Step
from mailbridge.engine.ports import AutomationRef, Contact, Transaction
from mailbridge.engine.runs import Run

_UNLOADED: Any = object()


@dataclass
class Execution:
    """One step of one run being executed, inside the engine's transaction."""

    run: Run
    step: Step  # stored vocabulary
    automation: AutomationRef
    now: datetime
    tx: Transaction
    _contact: Contact | None = field(default=_UNLOADED, repr=False)

    async def contact(self) -> Contact | None:
        if self._contact is _UNLOADED:
            self._contact = (
                None
                if self.run.contact_id is None
                else await self.tx.contacts.find(self.run.team_id, self.run.contact_id)
            )
        return self._contact

    async def data(self) -> dict[str, Any]:
        return self.run.data(await self.contact())
