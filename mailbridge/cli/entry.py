"""The ``mailbridge`` executable: picks the command tree, and turns every failure into the
spec's error object on stderr with exit 1 (never exit 2, never a traceback).

An API client command (``mailbridge emails send …``) loads only the client's modules: no
server, no database drivers, so it starts in a fraction of the time the operator
commands need."""

from __future__ import annotations

import json
import os
import sys

import typer

# typer vendors its own click; its usage errors are only reachable here.
from typer._click import exceptions as click_errors

from mailbridge.cli.client import CLIENT_COMMANDS, CliFailure, report


def _app(argv: list[str]) -> typer.Typer:
    if argv[:1] and argv[0] in CLIENT_COMMANDS:
        from mailbridge.cli.client import client_app

        return client_app()
    from mailbridge.cli.main import app

    return app


def main() -> None:
    argv = sys.argv[1:]
    try:
        code = _app(argv)(args=argv, prog_name="mailbridge", standalone_mode=False)
    except CliFailure as failure:
        code = report(failure)
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        code = 0
    except click_errors.UsageError as exc:
        message = exc.format_message()
        if exc.ctx is not None:
            message += f" (see: {exc.ctx.command_path} --help)"
        sys.stderr.write(
            json.dumps({"statusCode": None, "name": "cli_error", "message": message}) + "\n"
        )
        code = 1
    except typer.Abort:
        sys.stderr.write(
            json.dumps({"statusCode": None, "name": "cli_error", "message": "aborted"}) + "\n"
        )
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code if isinstance(code, int) else 0)
