"""``mailbridge login`` (a named profile, the key never echoed) and ``mailbridge doctor``
(what works and what does not, as a table of pass/fail)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from mailbridge.cli.client._config import DEFAULT_BASE_URL, DEFAULT_PROFILE, resolve, save_profile
from mailbridge.cli.client._failures import CliFailure, cli_error
from mailbridge.cli.client._http import Api
from mailbridge.cli.client._output import Output

Row = tuple[str, bool | None, str]
KEY_HELP = "the key (else asked for, hidden; or read from stdin when piped)"


def login(
    profile: Annotated[str, typer.Option("--profile", help="the profile's name")] = DEFAULT_PROFILE,
    base_url: Annotated[
        str, typer.Option("--base-url", help="where mailbridge runs")
    ] = DEFAULT_BASE_URL,
    api_key: Annotated[str | None, typer.Option("--api-key", help=KEY_HELP)] = None,
) -> None:
    """Save an API key as a named profile (the config file is 0600), once it is checked.

    Example: mailbridge login --profile prod --base-url https://mail.example.org
    """
    key = api_key
    if key is None:
        key = (
            typer.prompt("API key", hide_input=True, err=True)
            if sys.stdin.isatty() else sys.stdin.readline()
        ).strip()  # fmt: skip
    if not key:
        raise cli_error("no API key given")
    target = resolve(key, base_url, None)
    with Api(target) as api:
        try:
            api.call("GET", "/api-keys", params={"limit": "1"})
        except CliFailure as failure:
            # A sending-only key is a key: it may not list keys, and says so.
            if failure.envelope.get("name") != "restricted_api_key":
                raise
    path = save_profile(profile, key, target.base_url)
    Output.choose(False, False).show(
        {"profile": profile, "base_url": target.base_url, "config": str(path)}
    )


def _check(rows: list[Row], name: str, ok: bool | None, detail: str) -> None:
    rows.append((name, ok, detail))


def doctor(
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="MAILBRIDGE_API_KEY")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="MAILBRIDGE_BASE_URL")
    ] = None,
    profile: Annotated[str | None, typer.Option("--profile", envvar="MAILBRIDGE_PROFILE")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="the checks as JSON")] = False,
) -> None:
    """Check the key, the API (reachable, version), the database's revision, the runner's
    heartbeat, the SMTP relay and the DNS of the team's domains. Exit 1 when one fails.

    Example: mailbridge doctor --profile prod
    """
    target = resolve(api_key, base_url, profile)
    rows: list[Row] = []
    source = f"profile {target.profile}" if target.profile else "flag or environment"
    _check(rows, "key", bool(target.api_key), source if target.api_key else "no key")
    with Api(target, need_key=False) as api:
        health = _health(api, rows, target.base_url)
        if health is not None and target.api_key:
            _key_and_domains(api, rows)
    failed = any(ok is False for _name, ok, _detail in rows)
    if json_output or not sys.stdout.isatty():
        checks = [{"check": n, "ok": ok, "detail": d} for n, ok, d in rows]
        Output(json=True).show({"ok": not failed, "checks": checks})
    else:
        _table(rows)
    if failed:
        raise typer.Exit(1)


def _health(api: Api, rows: list[Row], where: str) -> dict[str, Any] | None:
    try:
        health = api.call("GET", "/health", params={"relay": "true"})
    except CliFailure as failure:
        _check(rows, "api", False, f"{where}: {failure.envelope.get('message')}")
        return None
    _check(
        rows, "api", True, f"{where}: mailbridge {health.get('version')}, {health.get('database')}"
    )
    revision, expected = health.get("revision"), health.get("revision_expected")
    _check(
        rows,
        "database",
        revision == expected and revision is not None,
        f"revision {revision}" + ("" if revision == expected else f", code expects {expected}"),
    )
    runner = health.get("runner") or {}
    beat = runner.get("heartbeat_at")
    _check(
        rows,
        "runner",
        bool(runner.get("alive")),
        f"heartbeat {beat}" if beat else "no runner has reported (mailbridge runner)",
    )
    public = health.get("public_url") or {}
    if public.get("url"):
        warning = public.get("warning")
        # A warning, not a failure: the links work, only providers' one-click does not.
        _check(rows, "public url", None if warning else True,
               f"warning: {warning}" if warning else str(public["url"]))  # fmt: skip
    relay = health.get("relay") or {}
    _check(rows, "smtp relay", relay.get("reachable") if relay.get("configured") else None,
           str(relay.get("detail", "")))  # fmt: skip
    return dict(health)


def _key_and_domains(api: Api, rows: list[Row]) -> None:
    try:
        api.call("GET", "/api-keys", params={"limit": "1"})
        _check(rows, "key valid", True, "full access")
    except CliFailure as failure:
        name = failure.envelope.get("name")
        _check(
            rows, "key valid", name == "restricted_api_key", str(failure.envelope.get("message"))
        )
        if name != "restricted_api_key":
            return
    try:
        listed = api.call("GET", "/domains", params={"limit": "100"})
    except CliFailure as failure:
        _check(rows, "domains", None, str(failure.envelope.get("message")))
        return
    domains = listed.get("data", [])
    if not domains:
        _check(rows, "domains", None, "none yet (mailbridge domains create --name …)")
    for listed_domain in domains:
        try:
            domain = api.call("GET", f"/domains/{listed_domain['id']}")
        except CliFailure as failure:
            _check(rows, f"dns {listed_domain.get('name')}", None, str(failure.envelope))
            continue
        records = {r.get("record"): r.get("status") for r in domain.get("records", [])}
        missing = [name for name, status in records.items() if status != "verified"]
        detail = domain.get("status", "") + (
            f"; not verified: {', '.join(missing)}" if missing else ""
        )
        _check(rows, f"dns {domain.get('name')}", domain.get("status") == "verified", detail)


def _table(rows: list[Row]) -> None:
    view = Table(show_header=True, header_style="bold")
    view.add_column("check")
    view.add_column("")
    view.add_column("detail", overflow="fold")
    for name, ok, detail in rows:
        mark = "[green]pass[/]" if ok else "[red]fail[/]" if ok is False else "[yellow]—[/]"
        view.add_row(name, mark, detail)
    Console().print(view)
