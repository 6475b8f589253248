"""Request bodies checked before any route works on them (DESIGN §6, docs/decisions.md).

- Size: a body over ``MAILBRIDGE_MAX_BODY_BYTES`` is answered ``413 payload_too_large``
  from its ``Content-Length``, or, for a body sent without one (chunked), as soon as
  the bytes read pass the limit — never after buffering it all.
- JSON (a JSON content type, or none: FastAPI reads those as JSON): nesting deeper than
  :data:`MAX_DEPTH` and lone UTF-16 surrogates (``"\\ud83d"`` is valid JSON but no
  UTF-8 text) are ``422 validation_error``, on every route, before a parser recurses
  into the body or a string that cannot be stored or sent is accepted.

Both JSON checks cost next to nothing on an ordinary body: nesting can pass
:data:`MAX_DEPTH` only if the body holds more brackets than that, and a lone surrogate
only if it holds a ``\\uD8..``-``\\uDF..`` escape; only then is the body parsed here.
The body is then handed on to the application unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailbridge.api.middleware import header, send_error
from mailbridge.errors import PayloadTooLarge, ValidationError

MAX_DEPTH = 64
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def _depth_and_surrogate(value: Any) -> tuple[int, str | None]:
    """The nesting depth of a parsed JSON value, and where a string (or a key) in it holds
    a lone surrogate (``to[0]``, ``headers.X-Note``), or None; iterative, so no depth can
    exhaust the stack."""
    deepest, lone = 0, None
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            for key, inner in item.items():
                if _unencodable(key):
                    lone = lone or f"a key of `{where or 'the body'}`"
                    continue
                stack.append((inner, depth + 1, f"{where}.{key}" if where else key))
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((inner, depth + 1, f"{where}[{i}]") for i, inner in enumerate(item))
        elif isinstance(item, str) and _unencodable(item):
            lone = lone or (f"`{where}`" if where else "the body")
    return deepest, lone


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_problem(body: bytes) -> ValidationError | None:
    """Why a JSON body is refused before parsing proper, or None (also for a body that
    is not JSON at all: the route's own parser says so)."""
    brackets = body.count(b"[") + body.count(b"{")
    if brackets <= MAX_DEPTH and not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        value = json.loads(body)
    except RecursionError:
        return ValidationError(f"The JSON body is nested deeper than {MAX_DEPTH} levels.")
    except ValueError:
        return None
    depth, lone = _depth_and_surrogate(value)
    if depth > MAX_DEPTH:
        return ValidationError(f"The JSON body is nested deeper than {MAX_DEPTH} levels.")
    if lone:
        return ValidationError(
            f"Invalid {lone}: it holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF "
            "escape), which no text can carry."
        )
    return None


class BodyGuard:
    """Reads a request's body within the size limit, checks JSON, and replays it."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        declared = (header(scope, b"content-length") or "").strip()
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_body_bytes:
            await send_error(send, self._too_large())
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await send_error(send, self._too_large())
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body and _is_json(header(scope, b"content-type")):
            problem = json_problem(body)
            if problem is not None:
                await send_error(send, problem)
                return
        await self.app(scope, _replay(body, receive), send)

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"The request body is larger than {self.max_body_bytes:,} bytes "
            "(MAILBRIDGE_MAX_BODY_BYTES)."
        )


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # a disconnect, when the client goes away

    return replayed
