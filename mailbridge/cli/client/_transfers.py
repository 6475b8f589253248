"""Commands that move files: ``contacts import`` (a CSV file uploaded once to ``POST
/contacts/imports``, its progress followed), ``contacts export`` (CSV), ``receiving
download`` (a received message's original bytes or one of its attachments)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import time
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

EXPORT_COLUMNS = (
    "id", "email", "first_name", "last_name", "unsubscribed", "created_at", "properties",
)  # fmt: skip
FILE_HELP = "a CSV file: email, first_name, last_name, unsubscribed; other columns: properties"
ATTACHMENT_HELP = "one of its attachments' ids (else the whole message)"
# Routes these commands call that no generated command does.
ROUTES = (("POST", "/contacts/imports"),)  # contacts import
POLL = 0.25  # seconds between two looks at an import's progress
DONE = ("completed", "failed")


class _Progress:
    """The import a file was uploaded as, beside the file: ``<file>.import-progress.json``."""

    def __init__(self, source: Path, digest: str) -> None:
        self.path = source.with_name(source.name + ".import-progress.json")
        self.digest = digest

    def import_id(self) -> str | None:
        try:
            saved = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("sha256") != self.digest:
            return None  # another file, or the file changed: a new import
        found = saved.get("import_id")
        return found if isinstance(found, str) else None

    def save(self, import_id: str) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"sha256": self.digest, "import_id": import_id}))
        os.replace(temporary, self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def contacts_import(
    file: Annotated[Path, typer.Argument(help=FILE_HELP)],
    audience_id: Annotated[
        str | None, typer.Option("--audience-id", help="default: the team's")
    ] = None,
    on_conflict: Annotated[
        str, typer.Option("--on-conflict", help="upsert (update existing) or skip")
    ] = "upsert",
    restart: Annotated[bool, typer.Option("--restart", help="upload the file again")] = False,
    **common: Any,
) -> None:
    """Import contacts from CSV: the file is uploaded once (POST /contacts/imports) and
    the service writes it; the command shows its progress and the rows that failed.
    Stopped half way, the same command follows the same import again (the service goes
    on without it).

    Example: mailbridge contacts import customers.csv --audience-id aud_123
    """
    output = Output.choose(common.pop("json_output"), common.pop("quiet"))
    target = resolve(common.pop("api_key"), common.pop("base_url"), common.pop("profile"))
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise cli_error(f"cannot read {file}: {exc.strerror or exc}") from None
    progress = _Progress(file, hashlib.sha256(data).hexdigest())
    with Api(target) as api:
        import_id = None if restart else progress.import_id()
        job = _existing(api, import_id) if import_id else None
        resumed = job is not None
        if job is None:
            fields = {"on_conflict": on_conflict}
            if audience_id:
                fields["audience_id"] = audience_id
            made = api.upload("/contacts/imports", file.name, data, fields)
            job = api.call("GET", f"/contacts/imports/{made['id']}")
            progress.save(job["id"])
        with _ImportBar(job["counts"]["total"], _written(job)) as advance:
            while job["status"] not in DONE:
                time.sleep(POLL)
                before = _written(job)
                job = api.call("GET", f"/contacts/imports/{job['id']}")
                advance(_written(job) - before)
    progress.clear()
    output.show({**job, "resumed": resumed})
    if job["status"] == "failed":
        raise typer.Exit(1)


def _existing(api: Api, import_id: str) -> dict[str, Any] | None:
    """The import a former run uploaded, unless it is gone or failed."""
    try:
        job = api.call("GET", f"/contacts/imports/{import_id}")
    except CliFailure:
        return None
    return job if isinstance(job, dict) and job.get("status") != "failed" else None


def _written(job: dict[str, Any]) -> int:
    counts = job.get("counts") or {}
    return sum(int(counts.get(name, 0)) for name in ("created", "updated", "skipped", "failed"))


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
