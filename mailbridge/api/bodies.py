"""Shapes shared by every router: the list object and hand-parsed JSON bodies."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pydantic
from fastapi import Request
from fastapi.exceptions import RequestValidationError

from mailbridge.storage.pagination import Page

T = TypeVar("T")
M = TypeVar("M", bound=pydantic.BaseModel)


def list_body(page: Page[T], view: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    return {"object": "list", "has_more": page.has_more, "data": [view(i) for i in page.items]}


def unpaged_list_body(items: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "list", "has_more": False, "data": list(items)}


async def parse_body(request: Request, model: type[M]) -> M:
    """Read and validate a JSON body after the caller was authorized.

    Routes that must answer an authorization error before looking at the body (the
    dashboard-only routes) parse it here; errors read exactly as FastAPI's would.
    """
    raw = await request.body()
    if not raw.strip():
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required"}]
        )
    try:
        data = json.loads(raw)
    except ValueError:
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error"}]
        ) from None
    return validate_body(model, data)


def validate_body(model: type[M], data: Any, location: tuple[int | str, ...] = ()) -> M:
    """Validate an already parsed body (or the part of it at ``location``); errors read as
    FastAPI's own body errors."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("body", *location, *error["loc"])} for error in exc.errors()]
        ) from None
