"""delay: park the run for a duration ("3 days", at most 30), then go on."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from mailbridge.engine.durations import parse_duration
from mailbridge.engine.execution import Execution
from mailbridge.engine.runs import Outcome, Sleep
from mailbridge.steps.base import StepKind


class DelayConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    duration: str | int | float

    @field_validator("duration")
    @classmethod
    def _readable(cls, value: Any) -> Any:
        parse_duration(value)
        return value


class Delay(StepKind):
    name: ClassVar[str] = "delay"
    stored_name: ClassVar[str] = "delay"
    config_model = DelayConfig

    async def execute(self, execution: Execution) -> Outcome:
        duration = parse_duration(execution.step.config["duration"])
        return Sleep(execution.now + duration, output={"seconds": duration.total_seconds()})
