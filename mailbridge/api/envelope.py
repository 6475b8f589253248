"""Every non-2xx answer is the spec's envelope ``{statusCode, name, message}``."""

from __future__ import annotations

from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mailbridge.errors import (
    ApiError,
    HttpStatusError,
    MethodNotAllowed,
    MissingRequiredField,
    NotFound,
    ValidationError,
)


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
    field = _field_name(tuple(first.get("loc", ())))
    detail = str(first.get("msg", "is not valid"))
    if field:
        return ValidationError(f"Invalid `{field}`: {detail}.")
    return ValidationError(f"Invalid request: {detail}.")


def known_error_response(exc: Exception) -> JSONResponse | None:
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
            return error_response(MethodNotAllowed())
        return error_response(HttpStatusError(exc.status_code, str(exc.detail)))
    return None


def install_error_handlers(app: FastAPI) -> None:
    async def on_known_error(_request: Request, exc: Exception) -> JSONResponse:
        response = known_error_response(exc)
        assert response is not None
        return response

    for kind in (
        ApiError,
        pydantic.ValidationError,
        RequestValidationError,
        StarletteHTTPException,
    ):
        app.add_exception_handler(kind, on_known_error)
