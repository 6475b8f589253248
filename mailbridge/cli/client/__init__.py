"""The API client side of the ``mailbridge`` command: one command group per resource,
talking HTTP to a running mailbridge (spec §1). Its modules import nothing of the
server (no services, no storage), so a client command starts fast."""

from __future__ import annotations

import typer

from mailbridge.cli.client._commands import register as _register_operations
from mailbridge.cli.client._failures import CliFailure, report
from mailbridge.cli.client._operations import GROUPS
from mailbridge.cli.client._session import doctor, login
from mailbridge.cli.client._transfers import (
    contacts_export,
    contacts_import,
    receiving_download,
    with_common,
)

CLIENT_COMMANDS = frozenset({*GROUPS, "health", "ready", "login", "doctor"})


def register(app: typer.Typer) -> None:
    _register_operations(app, {
        "contacts": [with_common(contacts_import), with_common(contacts_export)],
        "receiving": [with_common(receiving_download)],
    })  # fmt: skip
    app.command("login")(login)
    app.command("doctor")(doctor)


def client_app() -> typer.Typer:
    app = typer.Typer(name="mailbridge", no_args_is_help=True, pretty_exceptions_enable=False)
    register(app)
    return app


__all__ = ["CLIENT_COMMANDS", "CliFailure", "client_app", "register", "report"]
