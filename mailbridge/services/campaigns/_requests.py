"""The bodies of /campaigns: what a campaign may hold, checked before anything is stored.

A draft may lack a sender, a subject and a body (they are checked at send); what it
holds must still be text a message can carry, so a draft never fails at delivery.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator
from pydantic.config import JsonDict, JsonValue

from mailbridge.engine.durations import MAX_DURATION, DurationError, parse_duration
from mailbridge.mail.message_text import value_problems
from mailbridge.services.email import single_lines, texts
from mailbridge.wire import (
    LINE_PATTERN,
    MessageVariables,
    SingleLine,
    Text,
    declared,
    read_by_name,
    shaped,
)

MAX_BATCH_SIZE_PER_DAY = 1_000_000
MAX_DECIDE_AFTER = int(MAX_DURATION.total_seconds())  # seconds

# What the document says beyond the fields (mailbridge.wire): ``reply_to`` is one address
# or a list, and an A/B test's variants differ, at least one changing something (a
# non-null field; ``from_``, the field's own name, is read as ``from`` when that is absent).
_STRING: JsonDict = {"type": "string"}
_LINE: JsonDict = {"type": "string", "pattern": LINE_PATTERN}
REPLY_TO: list[JsonValue] = [
    _LINE,
    {"type": "array", "items": _LINE, "maxItems": 50},
    {"type": "null"},
]
_CHANGED: list[JsonValue] = [
    {"required": [name], "properties": {name: _STRING}}
    for name in ("subject", "html", "text", "from")
]
_CHANGED.append(
    {"required": ["from_"], "not": {"required": ["from"]}, "properties": {"from_": _STRING}}
)
CHANGES: JsonDict = {"anyOf": _CHANGED}


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


class Variant(BaseModel):
    """One arm of an A/B test: what it changes of the campaign."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, json_schema_extra=read_by_name)

    subject: SingleLine | None = Field(default=None, max_length=998)
    html: Text | None = None
    text: Text | None = None
    from_: SingleLine | None = Field(default=None, alias="from", max_length=640)

    _lines = field_validator("subject", "from_")(single_lines)
    _text = field_validator("html", "text")(texts)


class AbTest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    metric: Literal["open", "click", "reply"]
    variants: list[Variant] = Field(
        min_length=2, max_length=2, json_schema_extra={"contains": CHANGES, "uniqueItems": True}
    )
    test_fraction: float = Field(default=0.2, gt=0, le=1)
    decide_after: str | Annotated[int, declared(minimum=1, maximum=MAX_DECIDE_AFTER)] = "4h"
    auto_send_winner: StrictBool = True

    @field_validator("decide_after")
    @classmethod
    def _duration(cls, value: str | int) -> str | int:
        decide_after_of(value)
        return value

    @model_validator(mode="after")
    def _variants_differ(self) -> AbTest:
        a, b = (variant.model_dump(exclude_none=True) for variant in self.variants)
        if not a and not b:
            raise ValueError("`ab.variants` must change the subject, body or sender")
        if a == b:
            raise ValueError("`ab.variants` must differ")
        return self


def decide_after_of(value: str | int) -> timedelta:
    """``decide_after`` as a duration: seconds, or text like ``4h`` or ``PT4H``."""
    try:
        return parse_duration(value)  # one second to 30 days
    except DurationError as exc:
        raise ValueError(f"`ab.decide_after`: {exc}") from None


class CampaignFields(BaseModel):
    """POST /campaigns and PATCH /campaigns/:id (where only the given fields change)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, json_schema_extra=read_by_name)

    name: SingleLine | None = Field(default=None, max_length=200)
    from_: SingleLine | None = Field(default=None, alias="from", max_length=640)
    subject: SingleLine | None = Field(default=None, max_length=998)
    html: Text | None = None
    text: Text | None = None
    template_id: SingleLine | None = Field(default=None, max_length=100)
    variables: MessageVariables | None = None
    reply_to: list[str] | None = Field(
        default=None, max_length=50, json_schema_extra=shaped(anyOf=REPLY_TO)
    )
    preview_text: SingleLine | None = Field(default=None, max_length=998)
    audience_id: SingleLine | None = Field(default=None, max_length=100)
    segment_id: SingleLine | None = Field(default=None, max_length=100)
    topic_id: SingleLine | None = Field(default=None, max_length=100)
    recurrence: SingleLine | None = Field(default=None, max_length=500)
    batch_size_per_day: int | None = Field(default=None, ge=1, le=MAX_BATCH_SIZE_PER_DAY)
    ab: AbTest | None = None

    _lines = field_validator(
        "name", "from_", "subject", "template_id", "reply_to", "preview_text", "audience_id",
        "segment_id", "topic_id", "recurrence",
    )(single_lines)  # fmt: skip
    _text = field_validator("html", "text")(texts)
    _reply_to = field_validator("reply_to", mode="before")(_as_list)

    @field_validator("variables")
    @classmethod
    def _variables(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for problem in value_problems("variables", value):
            raise ValueError(problem)
        return value


class SendCampaign(BaseModel):
    """POST /campaigns/:id/send (spec §4.5)."""

    model_config = ConfigDict(extra="ignore")

    scheduled_at: SingleLine | None = Field(default=None, max_length=200)
    schedule_timezone: SingleLine | None = Field(default=None, max_length=64)

    _lines = field_validator("scheduled_at", "schedule_timezone")(single_lines)
