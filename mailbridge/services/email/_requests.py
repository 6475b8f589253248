"""The body of POST /emails (spec §4.1) and what it must satisfy before anything is stored."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from mailbridge.mail.message_text import line_problem, text_problem, value_problems

MAX_RECIPIENTS = 50
TAG_PART = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
HEADER_NAME = re.compile(r"^[!-9;-~]{1,100}$")  # printable ASCII without ':'
# RFC 2045's type/subtype (tokens), with parameters after a ';' if any.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
CONTENT_TYPE = re.compile(rf"^\s*{_TOKEN}/{_TOKEN}\s*(;.*)?$")


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

    filename: str | None = Field(default=None, max_length=255)
    content: str | list[int] | None = None  # base64 (the SDKs also send a byte list)
    path: str | None = None
    content_type: str | None = Field(default=None, max_length=255)
    content_id: str | None = Field(default=None, max_length=255)

    _check_lines = field_validator("filename", "path", "content_type", "content_id")(single_lines)

    @field_validator("content_type")
    @classmethod
    def _mime_type(cls, value: str | None) -> str | None:
        if value and not CONTENT_TYPE.match(value):
            raise ValueError("`content_type` must read type/subtype, e.g. application/pdf")
        return value


class TagIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    value: str

    @field_validator("name", "value")
    @classmethod
    def _ascii_word(cls, value: str) -> str:
        if not TAG_PART.match(value):
            raise ValueError("tags use only ASCII letters, digits, _ and -, at most 256")
        return value


class TemplateRef(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    alias: str | None = None
    variables: dict[str, Any] | None = None

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


class SendEmailRequest(BaseModel):
    """One email as POST /emails (and each item of POST /emails/batch) takes it."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    from_: str | None = Field(default=None, alias="from")
    to: list[str]
    cc: list[str] = Field(default_factory=list, max_length=MAX_RECIPIENTS)
    bcc: list[str] = Field(default_factory=list, max_length=MAX_RECIPIENTS)
    reply_to: list[str] = Field(default_factory=list, max_length=MAX_RECIPIENTS)
    subject: str | None = Field(default=None, max_length=998)
    html: str | None = None
    text: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    attachments: list[AttachmentIn] = Field(default_factory=list, max_length=100)
    tags: list[TagIn] = Field(default_factory=list, max_length=50)
    scheduled_at: str | None = None
    template: TemplateRef | None = None
    template_id: str | None = None
    variables: dict[str, Any] | None = None

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
