"""add_to_segment: make the run's contact an explicit member of a segment."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from mailbridge.engine.execution import Execution
from mailbridge.engine.ports import References
from mailbridge.engine.runs import Fail, Next, Outcome
from mailbridge.steps.base import StepKind


class AddToSegmentConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    segment_id: str = Field(min_length=1)


class AddToSegment(StepKind):
    name: ClassVar[str] = "add_to_segment"
    stored_name: ClassVar[str] = "add_to_segment"
    config_model = AddToSegmentConfig

    def check(self, config: object, references: References) -> list[str]:
        problems = super().check(config, references)
        if not problems:
            segment_id = AddToSegmentConfig.model_validate(config).segment_id
            if not references.segment_exists(segment_id):
                problems.append(f"config.segment_id: segment {segment_id!r} does not exist")
        return problems

    async def execute(self, execution: Execution) -> Outcome:
        run = execution.run
        if run.contact_id is None or await execution.contact() is None:
            return Fail("the contact no longer exists")
        segment_id = str(execution.step.config["segment_id"])
        if not await execution.tx.contacts.add_to_segment(run.team_id, segment_id, run.contact_id):
            return Fail(f"segment {segment_id} no longer exists")
        return Next(output={"segment_id": segment_id})
