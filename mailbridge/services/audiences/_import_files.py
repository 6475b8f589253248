"""Reading a contact import's CSV at upload: its options, its columns, its rows.

Everything the file and the options can get wrong is a 422 here, before anything is
stored: not UTF-8, no header, no email column, a column map naming a column the file
does not have, a property that is not registered (or registered with another type), a
malformed line. Rows are kept as the text the file had, one dict a row with its line
number; each row's values are checked when a runner writes it (``_imports``), where a
bad value fails that row only.

Without a ``column_map`` the columns are found by name (``email``, ``first_name``,
``last_name``, ``unsubscribed``, spaces and dashes read as underscores, any case) and
every other column is a contact property of that name. With one, only what it maps is
read.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict

from mailbridge.errors import ValidationError
from mailbridge.storage.tables import ContactProperty

MAX_IMPORT_BYTES = 20 * 1024 * 1024
MAX_IMPORT_ROWS = 200_000
KNOWN = ("email", "first_name", "last_name", "unsubscribed")
TRUE, FALSE = frozenset({"true", "yes", "1", "y"}), frozenset({"false", "no", "0", "n"})


class PropertyColumn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str
    type: Literal["string", "number", "boolean", "date"] | None = None


class ColumnMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    unsubscribed: str | None = None
    properties: dict[str, PropertyColumn] | None = None


class _Topic(BaseModel):
    id: str
    subscription: Literal["opt_in", "opt_out"]


class _Segment(BaseModel):
    id: str


@dataclass(frozen=True)
class ImportOptions:
    """The form's fields besides the file, checked for shape."""

    column_map: ColumnMap | None = None
    on_conflict: str = "skip"  # Resend's default: an existing contact is left as it is
    segment_ids: list[str] = field(default_factory=list)
    topics: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(
        cls,
        column_map: str | None = None,
        on_conflict: str | None = None,
        segments: str | None = None,
        topics: str | None = None,
    ) -> ImportOptions:
        if on_conflict not in (None, "", "upsert", "skip"):
            raise ValidationError("`on_conflict` must be upsert or skip.")
        mapped = _json_field(column_map, "column_map", ColumnMap | None)
        segment_refs = _json_field(segments, "segments", list[_Segment] | None) or []
        topic_refs = _json_field(topics, "topics", list[_Topic] | None) or []
        return cls(
            column_map=mapped,
            on_conflict=on_conflict or "skip",
            segment_ids=list(dict.fromkeys(ref.id for ref in segment_refs)),
            topics=[(ref.id, ref.subscription) for ref in topic_refs],
        )


def _json_field(text: str | None, name: str, shape: Any) -> Any:
    if text is None or not text.strip():
        return None
    try:
        return pydantic.TypeAdapter(shape).validate_json(text)
    except pydantic.ValidationError as problem:
        first = problem.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        suffix = f" at {where}" if where else ""
        raise ValidationError(f"`{name}` is not valid: {first['msg']}{suffix}.") from None


@dataclass(frozen=True)
class ImportFile:
    rows: list[dict[str, Any]]  # {"line", "email", "first_name", ..., "properties": {}}
    property_types: dict[str, str]  # every property a column fills: its registered type


def _name(header: str) -> str:
    return header.strip().lower().replace(" ", "_").replace("-", "_")


def _columns(
    header: list[str], mapping: ColumnMap | None, registry: Mapping[str, ContactProperty]
) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """Where each field and property is in a row, and the properties' types."""
    by_name: dict[str, int] = {}
    for index, name in enumerate(header):
        by_name.setdefault(name.strip(), index)
        by_name.setdefault(_name(name), index)

    def position(column: str, label: str) -> int:
        found = by_name.get(column.strip(), by_name.get(_name(column)))
        if found is None:
            raise ValidationError(f"`{label}` names the column {column!r}, which the file lacks.")
        return found

    fields: dict[str, int] = {}
    wanted: dict[str, tuple[int, str | None]] = {}
    if mapping is None:
        fields = {name: by_name[name] for name in KNOWN if name in by_name}
        used = set(fields.values())
        for index, name in enumerate(header):
            if index not in used and name.strip() and _name(name) not in wanted:
                wanted[_name(name)] = (index, None)
    else:
        for name in KNOWN:
            column = getattr(mapping, name)
            if column is not None:
                fields[name] = position(column, f"column_map.{name}")
        if "email" not in fields and "email" in by_name:
            fields["email"] = by_name["email"]
        for key, prop in (mapping.properties or {}).items():
            wanted[key] = (position(prop.column, f"column_map.properties.{key}"), prop.type)
    if "email" not in fields:
        raise ValidationError(
            "The file has no email column: name one `email` in the first line, "
            "or give `column_map.email`."
        )
    types: dict[str, str] = {}
    unknown = [key for key in wanted if key not in registry]
    if unknown:
        raise ValidationError(
            f"Column(s) {', '.join(unknown)} are not registered contact properties: "
            "register them with POST /contact-properties, or leave them out with a "
            "`column_map`."
        )
    for key, (_index, declared) in wanted.items():
        registered = registry[key].type
        if declared is not None and declared != registered:
            raise ValidationError(
                f"`column_map.properties.{key}.type` is {declared}; the property is a {registered}."
            )
        types[key] = registered
    return fields, {key: index for key, (index, _t) in wanted.items()}, types


def read_import_file(
    data: bytes, mapping: ColumnMap | None, registry: Mapping[str, ContactProperty]
) -> ImportFile:
    """The file's rows, or 422 telling the first thing wrong with it (CPU-bound: run it
    in a thread for a large file)."""
    if len(data) > MAX_IMPORT_BYTES:
        raise ValidationError(f"The file is over {MAX_IMPORT_BYTES // (1024 * 1024)} MB.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise ValidationError(f"The file is not UTF-8 text (byte {problem.start}).") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[dict[str, Any]] = []
    try:
        header = next(reader, None)
        if not header or not any(name.strip() for name in header):
            raise ValidationError("The file is empty: its first line must name the columns.")
        fields, properties, types = _columns(header, mapping, registry)
        for record in reader:
            if not any(value.strip() for value in record):
                continue
            if len(rows) >= MAX_IMPORT_ROWS:
                raise ValidationError(f"The file has over {MAX_IMPORT_ROWS:,} rows.")
            row: dict[str, Any] = {"line": reader.line_num}
            for name, index in fields.items():
                if index < len(record) and record[index].strip():
                    row[name] = record[index].strip()
            values = {
                key: record[index].strip()
                for key, index in properties.items()
                if index < len(record) and record[index].strip()
            }
            if values:
                row["properties"] = values
            rows.append(row)
    except csv.Error as problem:
        raise ValidationError(f"Line {reader.line_num} is not valid CSV: {problem}.") from None
    if not rows:
        raise ValidationError("The file has no rows after its first line.")
    return ImportFile(rows, types)


def typed_value(kind: str, raw: str, label: str) -> Any:
    """A CSV cell as the JSON value a property of ``kind`` takes (422 naming ``label``)."""
    if kind == "number":
        try:
            number = float(raw) if any(c in raw for c in ".eE") else int(raw)
        except ValueError:
            raise ValidationError(f"`{label}` must be a number, not {raw[:40]!r}.") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise ValidationError(f"`{label}` must be a finite number.")
        return number
    if kind == "boolean":
        return flag(raw, label)
    return raw


def flag(raw: str, label: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValidationError(f"`{label}` must be true or false, not {raw[:40]!r}.")
