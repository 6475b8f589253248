"""How the API client commands fail: one error object on stderr, exit 1 (spec §1, §7).

- the API answered with an error: its envelope ``{statusCode, name, message}``, unchanged;
- the request never reached the API: ``{statusCode: 0, name: "network_error", message}``;
- the command line itself is wrong (flags, arguments, no key, no ``--yes``):
  ``{statusCode: null, name: "cli_error", message}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any


class CliFailure(Exception):
    """A failure the CLI reports as an error object (exit 1)."""

    def __init__(self, status: int | None, name: str, message: str) -> None:
        super().__init__(message)
        self.envelope: dict[str, Any] = {"statusCode": status, "name": name, "message": message}


def cli_error(message: str) -> CliFailure:
    return CliFailure(None, "cli_error", message)


def network_error(message: str) -> CliFailure:
    return CliFailure(0, "network_error", message)


def api_error(status: int, body: Any, text: str) -> CliFailure:
    """The API's envelope when it sent one; else one made from the status and the text."""
    if isinstance(body, dict) and isinstance(body.get("name"), str):
        failure = CliFailure(status, body["name"], str(body.get("message", "")))
        failure.envelope = body
        return failure
    return CliFailure(status, "application_error", text[:500] or f"HTTP {status}")


def report(failure: CliFailure) -> int:
    sys.stderr.write(json.dumps(failure.envelope) + "\n")
    return 1
