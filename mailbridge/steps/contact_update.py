"""contact_update: set first_name, last_name, unsubscribed or properties (merged).

A value is a literal or ``{"var": "event.<field>"}`` / ``{"var": "contact.<field>"}``,
read from the run's data when the step runs.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from mailbridge.engine.conditions import resolve_value
from mailbridge.engine.execution import Execution
from mailbridge.engine.runs import Fail, Next, Outcome
from mailbridge.steps.base import StepKind

FIELDS = ("first_name", "last_name", "unsubscribed", "properties")


class ContactUpdateConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    first_name: Any = None
    last_name: Any = None
    unsubscribed: Any = None
    properties: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _something(self) -> ContactUpdateConfig:
        if not self.model_fields_set & set(FIELDS):
            raise ValueError(f"set at least one of {', '.join(FIELDS)}")
        return self


class ContactUpdate(StepKind):
    name: ClassVar[str] = "contact_update"
    stored_name: ClassVar[str] = "contact_update"
    config_model = ContactUpdateConfig

    async def execute(self, execution: Execution) -> Outcome:
        contact_id = execution.run.contact_id
        if contact_id is None or await execution.contact() is None:
            return Fail("the contact no longer exists")
        data = await execution.data()
        changes: dict[str, Any] = {}
        for name in FIELDS:
            if name not in execution.step.config:
                continue
            value = execution.step.config[name]
            if name == "properties" and isinstance(value, dict):
                changes[name] = {key: resolve_value(item, data) for key, item in value.items()}
            else:
                changes[name] = resolve_value(value, data)
        if "unsubscribed" in changes and not isinstance(changes["unsubscribed"], bool):
            return Fail("`unsubscribed` must resolve to true or false")
        try:
            updated = await execution.tx.contacts.update(execution.run.team_id, contact_id, changes)
        except ValueError as refusal:  # a property value of the wrong type
            return Fail(str(refusal))
        if updated is None:
            return Fail("the contact no longer exists")
        return Next(output={"changed": sorted(changes)})
