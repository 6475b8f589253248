"""Commands that move files: ``contacts import`` (CSV, 100 rows a request through ``POST
/contacts/batch``, resumable), ``contacts export`` (CSV), ``receiving download`` (a
received message's original bytes or one of its attachments)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import IO, Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from mailbridge.cli.client._commands import common_options, follow
from mailbridge.cli.client._config import resolve
from mailbridge.cli.client._failures import CliFailure, cli_error
from mailbridge.cli.client._http import Api
from mailbridge.cli.client._output import Output

BATCH = 100  # the most POST /contacts/batch takes
KNOWN = ("email", "first_name", "last_name", "unsubscribed")
TRUE, FALSE = {"true", "yes", "1", "y"}, {"false", "no", "0", "n", ""}
EXPORT_COLUMNS = (
    "id", "email", "first_name", "last_name", "unsubscribed", "created_at", "properties",
)  # fmt: skip
FILE_HELP = "a CSV file: email, first_name, last_name, unsubscribed; other columns: properties"
ATTACHMENT_HELP = "one of its attachments' ids (else the whole message)"


def _column(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def _contact(row: dict[str, str], line: int) -> dict[str, Any]:
    """A CSV row as a contact: known columns as fields, any other filled one a property."""
    fields = {_column(key): (value or "").strip() for key, value in row.items() if key}
    if not fields.get("email"):
        raise cli_error(f"line {line}: no email")
    contact: dict[str, Any] = {"email": fields["email"]}
    for name in ("first_name", "last_name"):
        if fields.get(name):
            contact[name] = fields[name]
    flag = fields.get("unsubscribed", "").lower()
    if flag not in TRUE | FALSE:
        raise cli_error(f"line {line}: unsubscribed must be true or false, not {flag!r}")
    if flag:
        contact["unsubscribed"] = flag in TRUE
    properties = {k: v for k, v in fields.items() if k not in KNOWN and v}
    if properties:
        contact["properties"] = properties
    return contact


def _read_rows(path: Path) -> list[dict[str, Any]]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or "email" not in [_column(n) for n in reader.fieldnames]:
                raise cli_error(f"{path}: the first line must name the columns, one of them email")
            return [_contact(row, number) for number, row in enumerate(reader, start=2)]
    except OSError as exc:
        raise cli_error(f"cannot read {path}: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise cli_error(f"{path} is not a UTF-8 CSV file: {exc}") from None


class _Progress:
    """Where an import got to, beside the file: ``<file>.import-progress.json``."""

    def __init__(self, source: Path, digest: str) -> None:
        self.path = source.with_name(source.name + ".import-progress.json")
        self.digest = digest

    def done(self) -> int:
        try:
            saved = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return 0
        if saved.get("sha256") != self.digest:
            return 0  # another file, or the file changed: from the start (upserts repeat safely)
        return int(saved.get("done", 0))

    def save(self, done: int) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"sha256": self.digest, "done": done}))
        os.replace(temporary, self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def contacts_import(
    file: Annotated[Path, typer.Argument(help=FILE_HELP)],
    audience_id: Annotated[
        str | None, typer.Option("--audience-id", help="default: the team's")
    ] = None,
    restart: Annotated[bool, typer.Option("--restart", help="from the first row")] = False,
    **common: Any,
) -> None:
    """Import contacts from CSV, 100 a request. Killed half way, the same command goes on
    where it stopped (and rows sent twice are only updated, never doubled).

    Example: mailbridge contacts import customers.csv --audience-id aud_123
    """
    output = Output.choose(common.pop("json_output"), common.pop("quiet"))
    target = resolve(common.pop("api_key"), common.pop("base_url"), common.pop("profile"))
    rows = _read_rows(file)
    progress = _Progress(file, hashlib.sha256(file.read_bytes()).hexdigest())
    start = 0 if restart else progress.done()
    counts: dict[str, int] = {}
    with Api(target) as api, _ImportBar(len(rows), start) as advance:
        for first in range(start, len(rows), BATCH):
            batch = rows[first : first + BATCH]
            body: dict[str, Any] = {"contacts": batch}
            if audience_id:
                body["audience_id"] = audience_id
            try:
                answer = api.call("POST", "/contacts/batch", body=body)
            except CliFailure as failure:
                failure.envelope["message"] = (
                    f"rows {first + 2}-{first + len(batch) + 1} of {file}: "
                    f"{failure.envelope.get('message')} (run again to go on from there)"
                )
                raise
            for item in answer.get("data", []):
                action = str(item.get("action", "sent"))
                counts[action] = counts.get(action, 0) + 1
            progress.save(first + len(batch))
            advance(len(batch))
    progress.clear()
    output.show({"object": "import", "rows": len(rows), "resumed_at_row": start, **counts})


class _ImportBar:
    """A progress bar on stderr when it is a terminal; a no-op otherwise."""

    def __init__(self, total: int, done: int) -> None:
        self.progress: Progress | None = None
        if sys.stderr.isatty():
            self.progress = Progress(
                TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=Console(stderr=True),
            )  # fmt: skip
            self.task = self.progress.add_task("import", total=total, completed=done)

    def __enter__(self) -> Any:
        if self.progress is not None:
            self.progress.start()
        return self.advance

    def advance(self, count: int) -> None:
        if self.progress is not None:
            self.progress.advance(self.task, count)

    def __exit__(self, *_exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


def contacts_export(
    output_file: Annotated[str, typer.Option("--output", "-o", help="- for stdout")] = "-",
    audience_id: Annotated[str | None, typer.Option("--audience-id")] = None,
    **common: Any,
) -> None:
    """Export every contact as CSV (id, email, names, unsubscribed, created_at, properties).

    Example: mailbridge contacts export -o contacts.csv
    """
    common.pop("json_output"), common.pop("quiet")
    target = resolve(common.pop("api_key"), common.pop("base_url"), common.pop("profile"))
    params = {"audience_id": audience_id} if audience_id else {}
    with Api(target) as api, _Opened(output_file) as handle:
        writer = csv.writer(handle)
        writer.writerow(EXPORT_COLUMNS)
        for item in follow(api, "/contacts", params):
            row = [item.get(name) for name in EXPORT_COLUMNS]
            row[-1] = json.dumps(item.get("properties") or {}, ensure_ascii=False)
            writer.writerow(["" if value is None else value for value in row])


class _Opened:
    def __init__(self, name: str) -> None:
        self.name = name
        self.handle: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        if self.name == "-":
            return sys.stdout
        self.handle = open(self.name, "w", newline="", encoding="utf-8")
        return self.handle

    def __exit__(self, *_exc: object) -> None:
        if self.handle is not None:
            self.handle.close()


def receiving_download(
    received_id: Annotated[str, typer.Argument(help="a received email's id")],
    attachment: Annotated[str | None, typer.Option("--attachment", help=ATTACHMENT_HELP)] = None,
    output_file: Annotated[str, typer.Option("--output", "-o", help="- for stdout")] = "-",
    **common: Any,
) -> None:
    """Download a received email's original bytes (.eml) or one of its attachments.

    Example: mailbridge receiving download rcv_123 -o message.eml
    """
    common.pop("json_output"), common.pop("quiet")
    target = resolve(common.pop("api_key"), common.pop("base_url"), common.pop("profile"))
    with Api(target) as api:
        if attachment is None:
            url = api.call("GET", f"/emails/receiving/{received_id}").get("raw_url")
        else:
            found = [
                item for item in follow(api, f"/emails/receiving/{received_id}/attachments", {})
                if item.get("id") == attachment
            ]  # fmt: skip
            if not found:
                raise CliFailure(404, "not_found", "Attachment not found.")
            url = found[0].get("download_url")
        if not url:
            raise cli_error("the API gave no download link")
        # The link names the public URL (for people); the same path is served where the
        # CLI talks to, which may be an address only it can reach.
        link = urlsplit(url)
        response = api.raw("GET", urlunsplit(("", "", link.path, link.query, "")))
    if output_file == "-":
        sys.stdout.buffer.write(response.content)
        sys.stdout.buffer.flush()
    else:
        Path(output_file).write_bytes(response.content)


def with_common(function: Any) -> Any:
    """``function`` with the options every client command has (key, target, output)."""
    import inspect

    signature = inspect.signature(function, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    parameters = own + common_options()

    def run(**values: Any) -> None:
        function(**values)

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__doc__ = function.__doc__
    run.__name__ = function.__name__
    return run
