"""condition: evaluate a rule (or an and/or group) on ``event.*`` and ``contact.*`` and
follow ``condition_met`` or ``condition_not_met``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, RootModel

from mailbridge.engine.conditions import AnyRule, holds, reads_contact
from mailbridge.engine.execution import Execution
from mailbridge.engine.ports import References
from mailbridge.engine.runs import Next, Outcome
from mailbridge.steps.base import StepKind


class ConditionConfig(RootModel[AnyRule]):
    pass


class Condition(StepKind):
    name: ClassVar[str] = "condition"
    stored_name: ClassVar[str] = "condition"
    edges = frozenset({"condition_met", "condition_not_met"})
    config_model: ClassVar[type[BaseModel]] = ConditionConfig

    def to_stored(self, config: Mapping[str, Any], references: References) -> dict[str, Any]:
        return dict(config)

    async def execute(self, execution: Execution) -> Outcome:
        rule = execution.step.config
        if reads_contact(rule):
            data = await execution.data()
        else:  # the contact is not loaded for a rule on the event alone
            data = execution.run.data(None)
        met = holds(rule, data)
        return Next("condition_met" if met else "condition_not_met", output={"met": met})
