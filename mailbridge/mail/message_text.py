"""What text may go into a message, checked when a request is accepted (DESIGN §6).

A message is bytes on the wire: a string that cannot be encoded (a lone UTF-16
surrogate, which valid JSON can carry as ``"\\ud83d"``) or that holds control
characters cannot be composed into one, and a CR or LF in a header value would start a
header of its own. So every string that reaches a message is checked before anything
is stored, and a refusal names the field — never accepted first and failed at delivery.

- single-line values (addresses and names, subject, header values, attachment file
  names and content types): no C0 control but tab (so no CR, LF or NUL), no DEL, no
  lone surrogate;
- multi-line text (html and text bodies, template variables): the same, except that
  CR and LF are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# What a single-line value may not hold, as the body of a regex class (for schemas too).
LINE_FORBIDDEN = r"\x00-\x08\x0a-\x1f\x7f"
_LINE_FORBIDDEN = re.compile(f"[{LINE_FORBIDDEN}]")
_TEXT_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _describe(character: str) -> str:
    if character == "\r" or character == "\n":
        return "a line break"
    if character == "\x00":
        return "a NUL character"
    return f"the control character U+{ord(character):04X}"


def _surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _problem(value: str, forbidden: re.Pattern[str]) -> str | None:
    found = forbidden.search(value)
    if found:
        return f"holds {_describe(found.group())}"
    if _surrogate(value):
        return "holds a lone UTF-16 surrogate"
    return None


def line_problem(value: str) -> str | None:
    """Why ``value`` cannot be a single-line message value, or None."""
    return _problem(value, _LINE_FORBIDDEN)


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be multi-line message text, or None."""
    return _problem(value, _TEXT_FORBIDDEN)


def value_problems(field: str, value: Any) -> Iterator[str]:
    """``field: problem`` for every string inside a JSON-like ``value`` (keys are
    single-line, strings multi-line) that cannot go into a message."""
    stack: list[tuple[str, Any]] = [(field, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                yield f"`{where}` {problem}"
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                problem = line_problem(str(key))
                if problem:  # never echoed: it may not even encode
                    yield f"a key of `{where}` {problem}"
                    continue
                stack.append((f"{where}.{key}", inner))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{index}]", inner) for index, inner in enumerate(item))
