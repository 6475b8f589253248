"""Every non-2xx answer is the spec's envelope ``{statusCode, name, message}``."""

from __future__ import annotations

from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from mailbridge.api.metrics import patterns
from mailbridge.api.outages import unavailable_error
from mailbridge.errors import (
    ApiError,
    HttpStatusError,
    MethodNotAllowed,
    MissingRequiredField,
    NotFound,
    ValidationError,
)
from mailbridge.storage.pagination import LIMIT_MESSAGE


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.to_envelope(), status_code=error.status_code, headers=error.headers)


def _field_name(location: tuple[Any, ...]) -> str:
    """``("body", 2, "to", 0)`` reads ``[2].to[0]``."""
    name = ""
    for part in location[1:]:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


def translate_validation_error(exc: RequestValidationError) -> ApiError:
    """FastAPI's validation errors, told in the spec's names."""
    errors = list(exc.errors())
    for error in errors:
        if error.get("type") == "json_invalid":
            return ValidationError("The request body is not valid JSON.")
    for error in errors:
        location = tuple(error.get("loc", ()))
        if error.get("type") == "missing" and location[:1] == ("body",):
            field = _field_name(location)
            if not field:
                return MissingRequiredField("Missing request body.")
            return MissingRequiredField.for_field(field)
    first = errors[0] if errors else {}
    if tuple(first.get("loc", ())) == ("query", "limit"):
        return ValidationError(LIMIT_MESSAGE)
    field = _field_name(tuple(first.get("loc", ())))
    detail = str(first.get("msg", "is not valid"))
    if field:
        return ValidationError(f"Invalid `{field}`: {detail}.")
    return ValidationError(f"Invalid request: {detail}.")


def known_error_response(exc: Exception, request: Request | None = None) -> JSONResponse | None:
    """The envelope of an error the caller caused (or the API raised on purpose); None for
    anything else, which is a 500."""
    if isinstance(exc, ApiError):
        return error_response(exc)
    if isinstance(exc, RequestValidationError):
        return error_response(translate_validation_error(exc))
    if isinstance(exc, pydantic.ValidationError):
        # A model validated inside a service, not by FastAPI: still the caller's input.
        problem = exc.errors()[0]
        field = ".".join(str(part) for part in problem["loc"])
        return error_response(ValidationError(f"Invalid `{field}`: {problem['msg']}."))
    if isinstance(exc, StarletteHTTPException):
        if exc.status_code == 404:
            return error_response(NotFound())
        if exc.status_code == 405:
            allow = allowed_methods(request) if request is not None else None
            return error_response(MethodNotAllowed(headers={"Allow": allow} if allow else None))
        return error_response(HttpStatusError(exc.status_code, str(exc.detail)))
    unavailable = unavailable_error(exc, "a request")  # the database is out of reach: 503
    return None if unavailable is None else error_response(unavailable)


class ErrorEnvelope(BaseModel):
    """Every error's body (spec §7)."""

    statusCode: int | None
    name: str
    message: str


# What any route may answer besides its success, declared on every route of the document
# so that generated clients and schemathesis know the envelope.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorEnvelope, "description": description}
    for status, description in (
        (400, "The body could not be read (not UTF-8, not a form) (`validation_error`)."),
        (401, "Missing or restricted API key (`missing_api_key`, `restricted_api_key`)."),
        (403, "Invalid key, a member's role, a dashboard-only route, a paused sender."),
        (404, "No such resource for this team (`not_found`)."),
        (405, "The path exists, the method does not (`method_not_allowed`, with `Allow`)."),
        (409, "A conflict: an idempotent request under way, a resource that exists."),
        (413, "The body is over `MAILBRIDGE_MAX_BODY_BYTES` (`payload_too_large`)."),
        (422, "The request is not valid (`validation_error` and the spec's field names)."),
        (429, "A rate limit or quota (`rate_limit_exceeded`, `daily_quota_exceeded`, ...)."),
        (503, "The database or Redis is out of reach just now (`service_unavailable`)."),
    )
}


def allowed_methods(request: Request) -> str:
    """The ``Allow`` header of a 405 (RFC 9110 §15.5.6): the methods of the resource the
    path names — every route of the first matching template (``/contacts/batch`` before
    ``/contacts/{id_or_email}``), where the router names only one route's."""
    path = request.url.path
    found = [p for p in patterns(request.app.router.routes) if p.regex.match(path)]
    if not found:
        return ""
    template = found[0].template
    methods = {m for p in found if p.template == template and p.methods for m in p.methods}
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    async def on_known_error(request: Request, exc: Exception) -> JSONResponse:
        response = known_error_response(exc, request)
        assert response is not None
        return response

    for kind in (
        ApiError,
        pydantic.ValidationError,
        RequestValidationError,
        StarletteHTTPException,
    ):
        app.add_exception_handler(kind, on_known_error)
