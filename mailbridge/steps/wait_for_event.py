"""wait_for_event: park until the contact's event arrives (``event_received``) or the
timeout passes (``timeout``); ``filter_rule`` narrows which events count. Stored as
``wait``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mailbridge.engine.conditions import parse_rule
from mailbridge.engine.durations import parse_duration
from mailbridge.engine.execution import Execution
from mailbridge.engine.runs import Outcome, Wait
from mailbridge.steps.base import StepKind


class WaitConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    event_name: str = Field(min_length=1, max_length=200)
    timeout: str | int | float | None = None
    filter_rule: dict[str, Any] | None = None

    @field_validator("timeout")
    @classmethod
    def _readable(cls, value: Any) -> Any:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("filter_rule")
    @classmethod
    def _rule(cls, value: Any) -> Any:
        if value is not None:
            parse_rule(value)
        return value


class WaitForEvent(StepKind):
    name: ClassVar[str] = "wait_for_event"
    stored_name: ClassVar[str] = "wait"
    edges = frozenset({"event_received", "timeout"})
    config_model = WaitConfig

    async def execute(self, execution: Execution) -> Outcome:
        config = execution.step.config
        timeout = config.get("timeout")
        timeout_at = None if timeout is None else execution.now + parse_duration(timeout)
        return Wait(str(config["event_name"]), timeout_at)
