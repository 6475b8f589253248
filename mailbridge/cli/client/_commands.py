"""The API client's commands, made from the operations table (``_operations``): one
typer group per resource, one command per operation, each with the same way in (key,
target, output) and out (the API's JSON, or an error object and exit 1)."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from mailbridge.cli.client._config import resolve
from mailbridge.cli.client._failures import cli_error
from mailbridge.cli.client._http import Api
from mailbridge.cli.client._operations import GROUPS, HEALTH, READY
from mailbridge.cli.client._operations_base import Op
from mailbridge.cli.client._output import Output

P = inspect.Parameter
FILE_HELP = "JSON body from a file, - for stdin"

COMMON: list[tuple[str, Any, Any]] = [
    (
        "api_key",
        Annotated[
            str | None,
            typer.Option(
                "--api-key",
                envvar="MAILBRIDGE_API_KEY",
                show_envvar=True,
                help="the key to use (else the profile's)",
            ),
        ],
        None,
    ),
    (
        "base_url",
        Annotated[
            str | None,
            typer.Option(
                "--base-url",
                envvar="MAILBRIDGE_BASE_URL",
                show_envvar=True,
                help="where mailbridge runs (default http://127.0.0.1:8000)",
            ),
        ],
        None,
    ),
    (
        "profile",
        Annotated[
            str | None,
            typer.Option(
                "--profile", envvar="MAILBRIDGE_PROFILE", help="a profile saved by mailbridge login"
            ),
        ],
        None,
    ),
    (
        "json_output",
        Annotated[
            bool, typer.Option("--json", help="JSON even on a terminal (the API's body as is)")
        ],
        False,
    ),
    ("quiet", Annotated[bool, typer.Option("--quiet", "-q", help="only ids, one a line")], False),
]


def common_options() -> list[P]:
    return [
        P(name, P.KEYWORD_ONLY, annotation=kind, default=default) for name, kind, default in COMMON
    ]


def _option(name: str, kind: Any, *flags: str, help: str, default: Any = None) -> P:
    """A keyword parameter typer reads as the option ``flags``."""
    return P(name, P.KEYWORD_ONLY, default=default,
             annotation=Annotated[kind, typer.Option(*flags, help=help)])  # fmt: skip


TEXT = str | None
SET_HELP = "KEY=VALUE into the body (VALUE read as JSON when it is; a.b nests)"


def _parameters(op: Op) -> list[P]:
    found = [
        P(name, P.POSITIONAL_OR_KEYWORD, annotation=Annotated[str, typer.Argument(help=name)])
        for name in op.arguments
    ]
    found += [
        _option(f"query_{name}", TEXT, "--" + name.replace("_", "-"), help=f"?{name}=")
        for name in op.query
        if name not in ("after", "before", "limit")
    ]
    if op.lists:
        found += [
            _option("query_limit", TEXT, "--limit", help="items a page (1-100)"),
            _option("query_after", TEXT, "--after", help="the page after this id"),
            _option("query_before", TEXT, "--before", help="the page before this id"),
            _option("every", bool, "--all", help="follow the cursors: every item", default=False),
        ]
    if op.body:
        found += [
            _option("file", TEXT, "--file", "-f", help=FILE_HELP),
            _option("settings", list[str] | None, "--set", "-s", help=SET_HELP),
        ]
        found += [
            _option("field_" + flag.replace("-", "_"), list[str] | None if spec.many else TEXT,
                    "--" + flag, help=spec.flag_help or f'"{spec.key}" in the body')
            for flag, spec in op.fields.items()
        ]  # fmt: skip
    if op.idempotent:
        found.append(
            _option("idempotency_key", TEXT, "--idempotency-key", help="retries with it act once")
        )
    if op.destructive:
        found.append(
            _option("yes", bool, "--yes", "-y", help="do it without asking", default=False)
        )
    return found + common_options()


def command(op: Op) -> Callable[..., None]:
    def run(**values: Any) -> None:
        execute(op, values)

    parameters = _parameters(op)
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__name__ = (op.group + "_" + op.name).replace("-", "_")
    run.__doc__ = op.help
    return run


def confirm(op: Op, what: str, yes: bool) -> None:
    """A destructive command asks on a terminal; off one it needs --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise cli_error(f"{op.command} {what} needs --yes when not run from a terminal")
    if not typer.confirm(f"{op.command} {what}?", default=False, err=True):
        raise cli_error("not confirmed: nothing done")


def execute(op: Op, values: dict[str, Any]) -> None:
    output = Output.choose(values.pop("json_output"), values.pop("quiet"))
    target = resolve(values.pop("api_key"), values.pop("base_url"), values.pop("profile"))
    path, named = op.path, []
    for name in op.arguments:
        named.append(values.pop(name))
        path = path.replace("{" + name + "}", quote(named[-1], safe="@"))
    if op.destructive:
        confirm(op, " ".join(named), values.pop("yes"))
    params = {
        key.removeprefix("query_"): value
        for key, value in values.items()
        if key.startswith("query_") and value is not None
    }
    headers = {}
    if values.get("idempotency_key"):
        headers["Idempotency-Key"] = values["idempotency_key"]
    body = op.fixed_body
    if op.body:
        body = read_body(op, values)
    with Api(target, need_key=op not in (HEALTH, READY)) as api:
        if op.lists and values.get("every"):
            output.stream(follow(api, path, params))
            return
        output.show(api.call(op.method, path, params=params, body=body, headers=headers))


def follow(api: Api, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item of a list, page after page (``after`` = the last id seen)."""
    params = {**params, "limit": params.get("limit") or "100"}
    while True:
        page = api.call("GET", path, params=params)
        items = page.get("data", []) if isinstance(page, dict) else []
        yield from items
        if not (isinstance(page, dict) and page.get("has_more") and items):
            return
        params = {**params, "after": items[-1]["id"]}
        params.pop("before", None)


def read_body(op: Op, values: dict[str, Any]) -> Any:
    """``--file`` (or ``-``), then each ``--set``, then the dedicated flags, merged."""
    body: Any = {}
    source = values.get("file")
    if source:
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
            body = json.loads(text)
        except OSError as exc:
            raise cli_error(f"cannot read {source}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise cli_error(f"{source} is not JSON: {exc}") from None
    extra: dict[str, Any] = {}
    for item in values.get("settings") or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise cli_error(f"--set wants KEY=VALUE, not {item!r}")
        _put(extra, key.split("."), _value(raw))
    for flag, spec in op.fields.items():
        given = values.get("field_" + flag.replace("-", "_"))
        if given is not None and given != []:
            extra[spec.key] = given
    if extra:
        if not isinstance(body, dict):
            raise cli_error("--set and field flags need a JSON object body, not an array")
        body = _merged(body, extra)
    return body


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _put(target: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        child = target.setdefault(key, {})
        if not isinstance(child, dict):
            raise cli_error(f"--set {'.'.join(keys)}: {key} is not an object")
        target = child
    target[keys[-1]] = value


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def register(app: typer.Typer, extras: dict[str, list[Callable[..., None]]]) -> None:
    """Add every resource group (with its ``extras``: commands that are not one request)
    and ``health`` and ``ready`` to ``app``."""
    for group, (help_text, ops) in GROUPS.items():
        sub = typer.Typer(help=help_text, no_args_is_help=True)
        for extra in extras.get(group, []):
            name = extra.__name__.removeprefix(group.replace("-", "_") + "_").replace("_", "-")
            sub.command(name)(extra)
        for template in ops:
            op = Op(group, template.name, template.method, template.path, template.help,
                    template.query, template.body, template.fields, template.fixed_body,
                    template.destructive, template.idempotent, template.example)  # fmt: skip
            sub.command(op.name, help=op.help, epilog=_example(op))(command(op))
        app.add_typer(sub, name=group)
    app.command("health", help=HEALTH.help, epilog=_example(HEALTH))(command(HEALTH))
    app.command("ready", help=READY.help, epilog=_example(READY))(command(READY))


def _example(op: Op) -> str:
    if op.example:
        return "Example: " + op.example
    arguments = " ".join(_sample(name) for name in op.arguments)
    words = ["mailbridge", op.group, op.name, arguments] if op.group else ["mailbridge", op.name]
    suffix = " --all --json" if op.lists else ""
    return "Example: " + " ".join(word for word in words if word) + suffix


def _sample(name: str) -> str:
    return {"id_or_email": "ann@example.org", "contact_ref": "ann@example.org"}.get(
        name, name.replace("_id", "").replace("id_or_", "") + "_123"
    )
