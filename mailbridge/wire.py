"""What request fields look like on the wire, for the OpenAPI document.

These annotations only *declare* a shape in the JSON Schema of a request model (a format,
a pattern, a length, "not null"); they do not validate. The services keep validating
with their own checks, so a bad value still hears the spec's sentence (``` `0` is not a
valid domain name.```) rather than pydantic's. What they declare must match what those
checks accept: a generated client, or schemathesis, reads the document as the truth.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from email_validator import SPECIAL_USE_DOMAIN_NAMES
from pydantic import BaseModel, BeforeValidator, Field
from pydantic.config import JsonDict, JsonValue
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypeAliasType

T = TypeVar("T")


def declared(**schema: Any) -> Any:
    """A ``Field`` adding ``schema`` to the JSON Schema only (no validation)."""
    return Field(json_schema_extra=schema)


# An address as email-validator accepts it (the services' check): at most 254 characters
# (it counts UTF-8 bytes), and not at a special-use domain (``.test``, ``.local``, ...).
_SPECIAL_USE = "|".join(
    "".join(f"[{c.upper()}{c}]" for c in name) for name in SPECIAL_USE_DOMAIN_NAMES
)
EmailAddress = Annotated[
    str,
    declared(format="email", maxLength=254, **{"not": {"pattern": f"[.@](?:{_SPECIAL_USE})$"}}),
]

# A domain name: dot-separated LDH labels of 1 to 63, a last label not all digits.
DOMAIN_PATTERN = (
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?![0-9]+$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
)
DomainName = Annotated[str, declared(pattern=DOMAIN_PATTERN, maxLength=253)]

# A field that may be left out but is never ``null`` (a PATCH field whose ``null`` is
# refused): ``name: Absent[str] = None`` — the default marks "left out".
Absent = Annotated[T | SkipJsonSchema[None], Field()]


# Whitespace as ``str.strip`` and Python's ``\s`` see it (``str.isspace``), spelled out as
# the body of a regex class: the ``\s`` of other engines differs (jsonschema_rs, which
# schemathesis checks data with, leaves out U+001C to U+001F and U+0085, takes U+FEFF).
SPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

# Text the service strips before requiring it non-empty: some non-whitespace character.
NonBlank = Annotated[str, declared(pattern=f"[^{SPACE}]")]

# What ``uuid.UUID`` reads as a UUID among strings of letters, digits, ``-`` and ``_``:
# 32 characters but dashes (anywhere), ``int(..., 16)`` digits (``0x`` first, ``_`` between).
UUID_TEXT = (
    r"(?=-*(?:[0-9A-Za-z_]-*){32}(?![0-9A-Za-z_-]))"
    r"-*(?:0-*[xX]-*(?:_-*)?)?[0-9A-Fa-f]-*(?:(?:_-*)?[0-9A-Fa-f]-*)*"
)


def trimmed(max_length: int | None = None, forbidden: str = "") -> str:
    """The pattern of a string the service strips of whitespace, then wants 1 to
    ``max_length`` characters long (any length without one) and, given ``forbidden`` (the
    body of a regex class), free of those characters."""
    inner = f"[^{forbidden}]" if forbidden else r"[\s\S]"
    edge = f"[^{SPACE}{forbidden}]"
    repeat = "*" if max_length is None else f"{{0,{max_length - 2}}}"
    return rf"^[{SPACE}]*{edge}(?:{inner}{repeat}{edge})?[{SPACE}]*{END}"


# The very end of a string. Not ``$``: Python's ``re`` (which schemathesis and the
# jsonschema validator use) lets ``$`` match before a last line break too.
END = r"(?![\s\S])"

# Text that can go into a message (mailbridge.mail.message_text): a single line holds no C0
# control but tab and no DEL; multi-line text may hold CR and LF. (Nor a lone UTF-16
# surrogate, which no pattern can say: schemathesis's Rust regex refuses ``\ud800``.)
LINE_PATTERN = rf"^[^\x00-\x08\x0a-\x1f\x7f]*{END}"
TEXT_PATTERN = rf"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*{END}"
SingleLine = Annotated[str, declared(pattern=LINE_PATTERN)]
Text = Annotated[str, declared(pattern=TEXT_PATTERN)]

# A JSON value whose strings are all text and whose keys are single lines, as
# ``message_text.value_problems`` wants template variables.
MessageValue = TypeAliasType(
    "MessageValue",
    "Text | int | float | bool | list[MessageValue]"
    " | Annotated[dict[str, MessageValue], declared(propertyNames={'pattern': LINE_PATTERN})]"
    " | None",
)


def shaped(**schema: Any) -> Callable[[JsonDict], None]:
    """A ``json_schema_extra`` putting ``schema`` in place of the shape pydantic derives (the
    field's title, default and description kept): for a field a before-validator widens,
    such as a list that also takes one string."""

    def replace(derived: JsonDict) -> None:
        kept = {k: v for k, v in derived.items() if k in ("title", "default", "description")}
        derived.clear()
        derived.update(kept, **schema)

    return replace


def read_by_name(schema: JsonDict, model: type[BaseModel]) -> None:
    """The ``json_schema_extra`` of a model that ``populate_by_name``: where an alias
    (``from``) is absent, the field's own name (``from_``) is read in its place."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    rules: list[JsonValue] = [
        {
            "anyOf": [
                {"required": [field.alias]},
                {"properties": {name: copy.deepcopy(properties[field.alias])}},
            ]
        }
        for name, field in model.model_fields.items()
        if field.alias and field.alias != name and field.alias in properties
    ]
    if rules:
        before = schema.get("allOf")
        schema["allOf"] = [*(before if isinstance(before, list) else []), *rules]


def _unchanged(value: Any) -> Any:
    return value


# A ``dict[str, Any]`` of template variables, declared as ``MessageValue``s.
MessageVariables = Annotated[
    dict[str, Any],
    BeforeValidator(
        _unchanged,
        json_schema_input_type=Annotated[
            dict[str, MessageValue], declared(propertyNames={"pattern": LINE_PATTERN})
        ],
    ),
]
