"""contact_delete: delete the run's contact; the run ends here (a terminal step)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from mailbridge.engine.execution import Execution
from mailbridge.engine.runs import End, Outcome
from mailbridge.steps.base import StepKind


class ContactDeleteConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContactDelete(StepKind):
    name: ClassVar[str] = "contact_delete"
    stored_name: ClassVar[str] = "contact_delete"
    edges = frozenset()
    terminal = True
    config_model = ContactDeleteConfig

    async def execute(self, execution: Execution) -> Outcome:
        contact_id = execution.run.contact_id
        deleted = contact_id is not None and await execution.tx.contacts.delete(
            execution.run.team_id, contact_id
        )
        return End(output={"deleted": deleted})
