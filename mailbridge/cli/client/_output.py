"""What a command prints on stdout: the API's JSON body, unchanged, when stdout is not a
terminal or with ``--json``; on a terminal a table (lists) or a key/value view (rich);
with ``-q`` only ids, one a line (for ``xargs``). ``--all`` streams: NDJSON with
``--json``, a progress count on stderr on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

PREFERRED_COLUMNS = (
    "id", "name", "email", "subject", "status", "from", "to", "type", "alias", "endpoint",
    "created_at",
)  # fmt: skip
MAX_COLUMNS = 6
MAX_CELL = 60


@dataclass(frozen=True)
class Output:
    json: bool = False
    quiet: bool = False

    @classmethod
    def choose(cls, json_flag: bool, quiet: bool) -> Output:
        return cls(json=json_flag or not sys.stdout.isatty(), quiet=quiet)

    def show(self, value: Any) -> None:
        if self.quiet:
            for item in _items(value):
                if isinstance(item, dict) and item.get("id") is not None:
                    print(item["id"])
            return
        if self.json or value is None:
            print(json.dumps(value, indent=2, ensure_ascii=False))
            return
        console = Console()
        if isinstance(value, dict) and isinstance(value.get("data"), list):
            console.print(table(value["data"]))
            if value.get("has_more"):
                console.print("[dim]more: --after " + str(_last_id(value["data"])) + " or --all[/]")
        elif isinstance(value, dict):
            console.print(key_values(value))
        else:
            console.print_json(json.dumps(value))

    def stream(self, items: Iterable[dict[str, Any]]) -> int:
        """Every item of a list followed to its end; how many."""
        count = 0
        if self.quiet or self.json:
            for item in items:
                count += 1
                if self.quiet:
                    if item.get("id") is not None:
                        print(item["id"], flush=True)
                else:
                    print(json.dumps(item, ensure_ascii=False), flush=True)
            return count
        collected = list(_counted(items))
        Console().print(table(collected))
        return len(collected)


def _counted(items: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Items, with a running count on stderr while they come."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    columns = (SpinnerColumn(), TextColumn("{task.completed:,} fetched"))
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("fetching", total=None)
        for item in items:
            progress.advance(task)
            yield item


def _items(value: Any) -> list[Any]:
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return list(value["data"])
    return [value]


def _last_id(items: list[Any]) -> Any:
    return items[-1].get("id") if items and isinstance(items[-1], dict) else None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def table(items: list[Any]) -> Table | Text:
    rows = [item for item in items if isinstance(item, dict)]
    if not rows:
        return Text("nothing here", style="dim")  # a table without columns prints nothing
    keys: list[str] = []
    for item in rows[:50]:
        keys.extend(key for key in item if key not in keys and key != "object")
    scalar = [k for k in keys if all(not isinstance(i.get(k), dict | list) for i in rows[:50])]
    columns = [k for k in PREFERRED_COLUMNS if k in keys][:MAX_COLUMNS]
    others = [k for k in scalar if k not in columns and not k.endswith(("_id", "updated_at"))]
    columns += others[: MAX_COLUMNS - len(columns)]
    view = Table(show_lines=False, header_style="bold")
    for column in columns:
        # ids are for copying: never cut short
        widest = max((len(_cell(item.get(column))) for item in rows), default=0)
        if column == "id":
            view.add_column(column, no_wrap=True, min_width=widest)
        else:
            view.add_column(column, overflow="fold")
    for item in rows:
        view.add_row(*(_cell(item.get(column)) for column in columns))
    return view


def key_values(value: dict[str, Any]) -> Table:
    view = Table(show_header=False, box=None, padding=(0, 2))
    view.add_column(style="bold")
    view.add_column(overflow="fold")
    for key, item in value.items():
        if key == "object":
            continue
        shown = item if isinstance(item, str) else json.dumps(item, indent=1, ensure_ascii=False)
        view.add_row(key, "" if item is None else shown)
    return view
