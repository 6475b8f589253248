"""How every command answers: JSON on stdout; a failure's error object on stderr, exit 1."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import typer
from pydantic import ValidationError

from mailbridge.config import Settings
from mailbridge.errors import ApiError, ConfigurationError

T = TypeVar("T")


def emit(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2))


def fail(name: str, message: str, status: int | None = None) -> None:
    error = {"statusCode": status, "name": name, "message": message}
    sys.stderr.write(json.dumps(error) + "\n")
    raise typer.Exit(code=1)


def settings_from_env() -> Settings:
    """The settings of the environment; settings that cannot work are the CLI's error
    object naming each, never a traceback."""
    try:
        return Settings()
    except ValidationError as invalid:
        problems = "; ".join(
            f"MAILBRIDGE_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            if error["loc"] else str(error["msg"]).removeprefix("Value error, ")
            for error in invalid.errors()
        )  # fmt: skip
        fail("cli_error", f"settings: {problems}")
    raise AssertionError("unreachable")


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run one async operator action, turning expected errors into the CLI's error object."""
    try:
        return asyncio.run(main())
    except ConfigurationError as exc:
        fail("cli_error", str(exc))
    except ApiError as exc:
        fail(exc.name, exc.message, exc.status_code)
    raise AssertionError("unreachable")
