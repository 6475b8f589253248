"""The template language: ``{{{NAME}}}`` placeholders, their declarations and rendering.

A placeholder is three braces around a name, optionally with a fallback written in
place: ``{{{FIRST_NAME}}}``, ``{{{PLAN|free}}}``; spaces inside the braces are
ignored (``{{{ PLAN | free }}}``). Two braces (``{{NAME}}``) are plain text, so
templates written for other engines pass through untouched. Names are:

- declared variables: letters, digits and ``_``, declared on the template with a
  type (``string`` or ``number``) and an optional ``fallback_value``;
- reserved variables, never declared: ``FIRST_NAME``, ``LAST_NAME``, ``EMAIL`` and
  ``UNSUBSCRIBE_URL``;
- contact fields, never declared: ``contact.first_name``, ``contact.last_name``,
  ``contact.email`` and ``contact.<property key>``.

Rendering never fails: a value that is missing falls back to the fallback written
in place, then to the declared ``fallback_value``, then to the empty string.
Everything here is pure, so the send pipeline and the automation engine share it.
"""

from __future__ import annotations

import html as html_lib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RESERVED_VARIABLES = ("FIRST_NAME", "LAST_NAME", "EMAIL", "UNSUBSCRIBE_URL")
CONTACT_PREFIX = "contact."
# "contact" is the namespace of the contact fields: declaring it would shadow them.
RESERVED_KEYS = frozenset((*RESERVED_VARIABLES, "contact"))
VARIABLE_TYPES = ("string", "number")
MAX_VARIABLES = 50
MAX_KEY_LENGTH = 50

KEY_PATTERN = re.compile(r"[A-Za-z0-9_]+")
PLACEHOLDER = re.compile(
    r"\{\{\{\s*"
    r"(?P<name>contact\.[A-Za-z0-9_-]+|[A-Za-z0-9_]+)"
    r"\s*(?:\|(?P<fallback>[^}\n]*))?"
    r"\}\}\}"
)

# Reserved names a contact can answer when the caller gave no value for them.
_CONTACT_FIELD_OF = {"FIRST_NAME": "first_name", "LAST_NAME": "last_name", "EMAIL": "email"}


@dataclass(frozen=True)
class Variable:
    """A declared variable of a template."""

    key: str
    type: str = "string"
    fallback_value: str | int | float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Variable:
        return cls(str(data["key"]), str(data.get("type", "string")), data.get("fallback_value"))

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "type": self.type, "fallback_value": self.fallback_value}


def used_variables(text: str | None) -> set[str]:
    """Every name a placeholder of ``text`` refers to, reserved and contact fields included."""
    if not text:
        return set()
    return {match["name"] for match in PLACEHOLDER.finditer(text)}


def is_reserved(name: str) -> bool:
    """Whether ``name`` is answered by the service rather than declared by the template."""
    return name in RESERVED_VARIABLES or name.startswith(CONTACT_PREFIX)


def undeclared_variables(texts: Iterable[str | None], declared: Sequence[Variable]) -> list[str]:
    """Names used in ``texts`` that are neither declared nor reserved, sorted."""
    keys = {variable.key for variable in declared}
    used = set().union(*(used_variables(text) for text in texts))
    return sorted(name for name in used if name not in keys and not is_reserved(name))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def declaration_problems(variables: Sequence[Variable]) -> list[str]:
    """What is wrong with a template's declared variables, one sentence per problem."""
    problems: list[str] = []
    if len(variables) > MAX_VARIABLES:
        problems.append(f"A template declares at most {MAX_VARIABLES} variables.")
    seen: set[str] = set()
    for variable in variables:
        key = variable.key
        if not KEY_PATTERN.fullmatch(key) or len(key) > MAX_KEY_LENGTH:
            problems.append(
                f"Variable key `{key}` must be 1 to {MAX_KEY_LENGTH} letters, digits or `_`."
            )
        elif key in RESERVED_KEYS:
            problems.append(f"Variable key `{key}` is reserved and cannot be declared.")
        elif key in seen:
            problems.append(f"Variable key `{key}` is declared more than once.")
        seen.add(key)
        if variable.type not in VARIABLE_TYPES:
            problems.append(f"Variable `{key}` has type `{variable.type}`: use string or number.")
        elif variable.fallback_value is not None:
            matches = (
                isinstance(variable.fallback_value, str)
                if variable.type == "string"
                else _is_number(variable.fallback_value)
            )
            if not matches:
                problems.append(f"The fallback_value of `{key}` must be a {variable.type}.")
    return problems


def value_problems(declared: Sequence[Variable], values: Mapping[str, Any]) -> list[str]:
    """What is wrong with the values given at send time (for the send pipeline to refuse).

    A declared variable without a fallback needs a value; a value must match its type.
    Values for names the template does not declare are ignored.
    """
    problems: list[str] = []
    for variable in declared:
        value = values.get(variable.key)
        if value is None:
            if variable.fallback_value is None:
                problems.append(f"Variable `{variable.key}` needs a value (it has no fallback).")
            continue
        if variable.type == "number" and not _is_number(value):
            problems.append(f"Variable `{variable.key}` must be a number.")
        elif variable.type == "string" and not isinstance(value, str | int | float):
            problems.append(f"Variable `{variable.key}` must be a string.")
    return problems


def format_value(value: Any) -> str | None:
    """A value as the text it renders to; None means "no value"."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 25.0 from a JSON client reads as 25
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def _contact_value(contact: Mapping[str, Any] | None, field: str) -> Any:
    """A contact field or property: the mapping itself first, then its ``properties``."""
    if contact is None:
        return None
    if contact.get(field) is not None:
        return contact[field]
    properties = contact.get("properties")
    if isinstance(properties, Mapping):
        return properties.get(field)
    return None


def render(
    text: str | None,
    variables: Mapping[str, Any],
    *,
    declared: Sequence[Variable] = (),
    contact: Mapping[str, Any] | None = None,
    reserved: Mapping[str, str] | None = None,
    html: bool = False,
) -> str:
    """``text`` with every placeholder replaced; never raises on a missing value.

    - ``variables``: the values given at send time, by declared key.
    - ``declared``: the template's variables, for their ``fallback_value``.
    - ``contact``: the recipient's fields (``first_name``, ``last_name``, ``email``)
      and properties, either at the top level or under ``properties``; it answers
      ``contact.*`` and, unless ``reserved`` does, ``FIRST_NAME``/``LAST_NAME``/``EMAIL``.
    - ``reserved``: values of the reserved names, e.g. ``{"UNSUBSCRIBE_URL": url}``.
    - ``html``: escape substituted values for HTML. A fallback written in place is
      part of the template's own source and is inserted as written.

    A reserved name resolves from ``reserved``, then the contact, then ``variables``.
    """
    if not text:
        return ""
    fallbacks = {variable.key: variable.fallback_value for variable in declared}
    reserved = reserved or {}

    def value_of(name: str) -> Any:
        if name.startswith(CONTACT_PREFIX):
            return _contact_value(contact, name[len(CONTACT_PREFIX) :])
        if name in RESERVED_VARIABLES:
            if reserved.get(name) is not None:
                return reserved[name]
            if name in _CONTACT_FIELD_OF:
                found = _contact_value(contact, _CONTACT_FIELD_OF[name])
                if found is not None:
                    return found
        return variables.get(name)

    def substitute(match: re.Match[str]) -> str:
        name = match["name"]
        value = format_value(value_of(name))
        if value is None:
            if match["fallback"] is not None:
                return match["fallback"].strip()
            value = format_value(fallbacks.get(name)) or ""
        return html_lib.escape(value, quote=True) if html else value

    return PLACEHOLDER.sub(substitute, text)
