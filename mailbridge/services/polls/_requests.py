"""The bodies of /polls: what a poll may hold, checked before anything is stored.

The question and the labels reach every recipient's message, so they are single lines
a message can carry (no controls, no lone surrogates). ``closes_at`` is read by the
service, which knows the time.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from mailbridge.mail.message_text import LINE_FORBIDDEN, line_problem
from mailbridge.wire import Absent, declared, trimmed

MAX_QUESTION_LENGTH = 500
MAX_LABEL_LENGTH = 200
MIN_OPTIONS, MAX_OPTIONS = 2, 10

# For the document: what the validators below accept, stripped. (Lone surrogates stay
# unsaid: validators that compile patterns to Rust regexes refuse them in a class. Of
# options the same but for case or surrounding spaces, a schema says only "unique".)
Question = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUESTION_LENGTH),
    declared(pattern=trimmed(forbidden=LINE_FORBIDDEN)),
]
Options = Annotated[
    list[Annotated[str, declared(pattern=trimmed(MAX_LABEL_LENGTH, LINE_FORBIDDEN))]],
    Field(min_length=MIN_OPTIONS, max_length=MAX_OPTIONS),
    declared(uniqueItems=True),
]


def _question(value: Any) -> Any:
    if value is None:
        return value
    question = str(value).strip()
    if not question:
        raise ValueError("`question` must not be blank")
    problem = line_problem(question)
    if problem:
        raise ValueError(f"`question` {problem}")
    return question


def _options(value: Any) -> Any:
    if value is None:
        return value
    labels: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        label = str(item).strip()
        if not label:
            raise ValueError(f"`options[{index}]` must not be blank")
        if len(label) > MAX_LABEL_LENGTH:
            raise ValueError(f"`options[{index}]` must be at most {MAX_LABEL_LENGTH} characters")
        problem = line_problem(label)
        if problem:
            raise ValueError(f"`options[{index}]` {problem}")
        if label.casefold() in seen:
            raise ValueError(f"`options[{index}]` repeats another option")
        seen.add(label.casefold())
        labels.append(label)
    return labels


class PollFields(BaseModel):
    """PATCH /polls/:id: only the fields given change (``closed`` closes or reopens)."""

    model_config = ConfigDict(extra="ignore")

    question: Absent[Question] = None
    options: Absent[Options] = None
    closes_at: str | None = Field(default=None, max_length=100)
    allow_change: Absent[StrictBool] = None
    closed: StrictBool | None = None

    _question = field_validator("question")(_question)
    _options = field_validator("options")(_options)


class NewPoll(BaseModel):
    """POST /polls."""

    model_config = ConfigDict(extra="ignore")

    question: Question
    options: Options
    closes_at: str | None = Field(default=None, max_length=100)
    allow_change: StrictBool = False

    _question = field_validator("question")(_question)
    _options = field_validator("options")(_options)
