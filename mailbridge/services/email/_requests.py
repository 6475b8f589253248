"""The body of POST /emails (spec §4.1) and what it must satisfy before anything is stored."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.config import JsonDict, JsonValue

from mailbridge.mail.message_text import line_problem, text_problem, value_problems
from mailbridge.wire import (
    END,
    LINE_PATTERN,
    MessageVariables,
    SingleLine,
    Text,
    declared,
    read_by_name,
    shaped,
)

MAX_RECIPIENTS = 50
# END, not `$`: `$` also matches before a last line break ("X-Tag\n" would pass).
TAG_PART = re.compile(rf"^[A-Za-z0-9_-]{{1,256}}{END}")
HEADER_NAME = re.compile(rf"^[!-9;-~]{{1,100}}{END}")  # printable ASCII without ':'
# RFC 2045's type/subtype (tokens), with parameters after a ';' if any.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
CONTENT_TYPE = re.compile(rf"^\s*{_TOKEN}/{_TOKEN}\s*(;.*)?$")

# What the document says beyond the fields (mailbridge.wire): a recipient field takes one
# address or a list (``to`` 1 to 50 of them, never null); a template is named by a
# non-empty ``id`` or ``alias``; ``content_type`` is empty or reads type/subtype.
_LINE: JsonDict = {"type": "string", "pattern": LINE_PATTERN}
TO: list[JsonValue] = [
    _LINE,
    {"type": "array", "items": _LINE, "minItems": 1, "maxItems": MAX_RECIPIENTS},
]
COPIES: list[JsonValue] = [
    _LINE,
    {"type": "array", "items": _LINE, "maxItems": MAX_RECIPIENTS},
    {"type": "null"},
]
NAMED: JsonDict = {
    "anyOf": [
        {"required": [name], "properties": {name: {"type": "string", "minLength": 1}}}
        for name in ("id", "alias")
    ]
}
# Without a template (``template``, or a non-empty ``template_id``) the sender is the
# body's: a non-empty ``from`` (``from_`` when ``from`` is absent); a template's is looked up.
_FILLED: JsonDict = {"type": "string", "minLength": 1}
SENDER: list[JsonValue] = [
    {"required": ["from"], "properties": {"from": _FILLED}},
    {"required": ["from_"], "not": {"required": ["from"]}, "properties": {"from_": _FILLED}},
    {"required": ["template"], "properties": {"template": {"type": "object"}}},
    {"required": ["template_id"], "properties": {"template_id": _FILLED}},
]
MIME_TYPE = declared(allOf=[{"pattern": f"^$|{CONTENT_TYPE.pattern}"}])


def _field(info: ValidationInfo) -> str:
    return str(info.field_name).rstrip("_")  # from_ is `from`


def single_lines(value: Any, info: ValidationInfo) -> Any:
    """A single-line value (or each of a list of them) that can go into a message header."""
    for item in value if isinstance(value, list) else [value]:
        problem = line_problem(item) if isinstance(item, str) else None
        if problem:
            raise ValueError(f"`{_field(info)}` {problem}")
    return value


def texts(value: Any, info: ValidationInfo) -> Any:
    problem = text_problem(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(f"`{_field(info)}` {problem}")
    return value


def _variables(value: Any, info: ValidationInfo) -> Any:
    for problem in value_problems(_field(info), value):
        raise ValueError(problem)
    return value


class AttachmentIn(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    filename: SingleLine | None = Field(default=None, max_length=255)
    content: str | list[int] | None = None  # base64 (the SDKs also send a byte list)
    path: SingleLine | None = None
    content_type: Annotated[SingleLine, MIME_TYPE] | None = Field(default=None, max_length=255)
    content_id: SingleLine | None = Field(default=None, max_length=255)

    _check_lines = field_validator("filename", "path", "content_type", "content_id")(single_lines)

    @field_validator("content_type")
    @classmethod
    def _mime_type(cls, value: str | None) -> str | None:
        if value and not CONTENT_TYPE.match(value):
            raise ValueError("`content_type` must read type/subtype, e.g. application/pdf")
        return value


class TagIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: Annotated[str, declared(pattern=TAG_PART.pattern)]
    value: Annotated[str, declared(pattern=TAG_PART.pattern)]

    @field_validator("name", "value")
    @classmethod
    def _ascii_word(cls, value: str) -> str:
        if not TAG_PART.match(value):
            raise ValueError("tags use only ASCII letters, digits, _ and -, at most 256")
        return value


class TemplateRef(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra=NAMED)

    id: SingleLine | None = None
    alias: SingleLine | None = None
    variables: MessageVariables | None = None

    _check_lines = field_validator("id", "alias")(single_lines)
    _check_variables = field_validator("variables")(_variables)

    @model_validator(mode="after")
    def _one_reference(self) -> TemplateRef:
        if not (self.id or self.alias):
            raise ValueError("template needs an `id` or an `alias`")
        return self

    @property
    def reference(self) -> str:
        return self.id or self.alias or ""


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


def _email_schema(schema: JsonDict, model: type[BaseModel]) -> None:
    read_by_name(schema, model)
    schema["anyOf"] = SENDER


class SendEmailRequest(BaseModel):
    """One email as POST /emails (and each item of POST /emails/batch) takes it."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, json_schema_extra=_email_schema
    )

    from_: SingleLine | None = Field(default=None, alias="from")
    to: list[str] = Field(json_schema_extra=shaped(anyOf=TO))
    cc: list[str] = Field(
        default_factory=list, max_length=MAX_RECIPIENTS, json_schema_extra=shaped(anyOf=COPIES)
    )
    bcc: list[str] = Field(
        default_factory=list, max_length=MAX_RECIPIENTS, json_schema_extra=shaped(anyOf=COPIES)
    )
    reply_to: list[str] = Field(
        default_factory=list, max_length=MAX_RECIPIENTS, json_schema_extra=shaped(anyOf=COPIES)
    )
    subject: SingleLine | None = Field(default=None, max_length=998)
    html: Text | None = None
    text: Text | None = None
    headers: dict[str, SingleLine] = Field(
        default_factory=dict, json_schema_extra={"propertyNames": {"pattern": HEADER_NAME.pattern}}
    )
    attachments: list[AttachmentIn] = Field(default_factory=list, max_length=100)
    tags: list[TagIn] = Field(default_factory=list, max_length=50)
    scheduled_at: SingleLine | None = None
    template: TemplateRef | None = None
    template_id: SingleLine | None = None
    variables: MessageVariables | None = None

    _check_lines = field_validator(
        "from_", "to", "cc", "bcc", "reply_to", "subject", "scheduled_at", "template_id"
    )(single_lines)
    _check_texts = field_validator("html", "text")(texts)
    _check_variables = field_validator("variables")(_variables)

    @field_validator("to", "cc", "bcc", "reply_to", mode="before")
    @classmethod
    def _string_or_list(cls, value: Any) -> Any:
        return _as_list(value)

    @field_validator("to")
    @classmethod
    def _to_count(cls, value: list[str]) -> list[str]:
        if not 1 <= len(value) <= MAX_RECIPIENTS:
            raise ValueError(f"`to` takes 1 to {MAX_RECIPIENTS} recipients")
        return value

    @field_validator("headers")
    @classmethod
    def _safe_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not HEADER_NAME.match(name):
                raise ValueError("a header name is printable ASCII without `:`, 1-100 long")
            problem = line_problem(text)
            if problem:
                raise ValueError(f"the value of header `{name}` {problem}")
        return value

    @property
    def template_reference(self) -> TemplateRef | None:
        if self.template is not None:
            return self.template
        if self.template_id:
            return TemplateRef(id=self.template_id, variables=self.variables)
        return None
