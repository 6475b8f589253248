"""The command-line tool covers the API: every route of the OpenAPI document has a command,
every command's help shows an example, and flags land in the request as they should."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mailbridge.api.app import create_app
from mailbridge.cli.client import _transfers as transfers
from mailbridge.cli.client import client_app
from mailbridge.cli.client._commands import read_body
from mailbridge.cli.client._failures import CliFailure
from mailbridge.cli.client._operations import GROUPS, operations
from mailbridge.cli.client._operations_base import Op
from mailbridge.cli.main import app as full_app


def _routes() -> set[tuple[str, str]]:
    document = create_app().openapi()
    return {
        (method.upper(), path) for path, methods in document["paths"].items() for method in methods
    }


def test_every_route_of_the_openapi_document_has_a_command() -> None:
    covered = {(op.method, op.path) for op in operations()} | set(transfers.ROUTES)
    missing = sorted(_routes() - covered)
    assert missing == [], f"routes without a command: {missing}"
    stale = sorted(covered - _routes())
    assert stale == [], f"commands for routes the API does not have: {stale}"


def test_command_names_are_unique_and_kebab_case() -> None:
    names = [op.command for op in operations()]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z-]+( [a-z-]+)?", name) for name in names)


def _commands() -> list[list[str]]:
    found = [[group, op.name] for group, (_help, ops) in GROUPS.items() for op in ops]
    found += [["contacts", "import"], ["contacts", "export"], ["receiving", "download"]]
    return [*found, ["health"], ["ready"], ["login"], ["doctor"]]


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_every_commands_help_shows_an_example(command: list[str]) -> None:
    result = CliRunner().invoke(client_app(), [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output and "mailbridge " in result.output


def test_the_full_tree_has_the_client_groups_beside_admin_and_the_servers() -> None:
    result = CliRunner().invoke(full_app, ["--help"], terminal_width=200)
    for name in ("serve", "runner", "inbound", "db", "bootstrap", "admin", "emails", "doctor"):
        assert re.search(rf"\b{name}\b", result.output), name
    admin = CliRunner().invoke(full_app, ["admin", "--help"], terminal_width=200)
    for name in ("teams", "keys", "members", "domains", "webhooks"):
        assert name in admin.output


def _send() -> Op:
    return next(op for op in GROUPS["emails"][1] if op.name == "send")


def test_a_body_merges_the_file_the_sets_and_the_flags(tmp_path: Path) -> None:
    source = tmp_path / "body.json"
    source.write_text(json.dumps({"subject": "From the file", "tags": [{"name": "a"}]}))
    body = read_body(_send(), {
        "file": str(source),
        "settings": ["headers.X-Campaign=launch", "track=true", "subject=From a set"],
        "field_to": ["ann@corp.io", "bo@corp.io"], "field_from": "Shop <hi@shop.io>",
    })  # fmt: skip
    assert body == {
        "subject": "From a set", "tags": [{"name": "a"}],
        "headers": {"X-Campaign": "launch"}, "track": True,
        "to": ["ann@corp.io", "bo@corp.io"], "from": "Shop <hi@shop.io>",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"settings": ["no-equals"]}, "KEY=VALUE"),
        ({"file": "/no/such/file.json"}, "cannot read"),
        ({"settings": ["a=1", "a.b=2"]}, "not an object"),
    ],
)
def test_a_body_that_cannot_be_made_is_a_cli_error(values: dict[str, object], says: str) -> None:
    with pytest.raises(CliFailure) as raised:
        read_body(_send(), values)
    assert raised.value.envelope["name"] == "cli_error" and says in raised.value.envelope["message"]


def test_settings_that_cannot_work_are_an_error_object_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def error_of_runner() -> str:
        result = CliRunner().invoke(full_app, ["runner"])
        assert result.exit_code == 1 and result.exception is not None
        error = json.loads(result.stderr)
        assert error["name"] == "cli_error" and error["message"].startswith("settings: ")
        return str(error["message"])

    monkeypatch.setenv("MAILBRIDGE_PORT", "eighty")
    assert "MAILBRIDGE_PORT: Input should be a valid integer" in error_of_runner()
    monkeypatch.delenv("MAILBRIDGE_PORT")
    monkeypatch.setenv("MAILBRIDGE_INBOX_AGENT_URL", "http://127.0.0.1:9/agent")
    assert "MAILBRIDGE_INBOX_AGENT_URL needs MAILBRIDGE_INBOX_AGENT_SECRET" in error_of_runner()
