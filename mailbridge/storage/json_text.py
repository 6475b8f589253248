"""JSON text from an encoder built once.

``json.dumps`` with any argument, and ``JSONEncoder.encode`` always, build a new C
encoder for every call, which costs as much as encoding a small document. The hot paths
(bulk rows, inline SQLite rows, the send answers) encode with one built here. There is no
circular-reference check: what they encode comes from JSON columns, request bodies and
the service's own dicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def json_encoder(
    separators: tuple[str, str] = (", ", ": "), *, ensure_ascii: bool = True, allow_nan: bool = True
) -> Callable[[Any], str]:
    """What ``json.dumps(value, separators=..., ensure_ascii=..., allow_nan=...)`` returns."""
    plain = json.JSONEncoder(separators=separators, ensure_ascii=ensure_ascii, allow_nan=allow_nan)
    make: Callable[..., Any] | None = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - a Python built without the _json accelerator
        return plain.encode
    strings = (
        json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    )
    item_separator, key_separator = separators
    encode_chunks = make(
        None, plain.default, strings, None, key_separator, item_separator,
        False, False, allow_nan,
    )  # fmt: skip

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return plain.encode(value)
        return "".join(encode_chunks(value, 0))

    return encode
