"""What an operation of the CLI's table is (``_operations``, ``_inbox_operations``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PAGE = ("limit", "after", "before")


@dataclass(frozen=True)
class Field:
    """A body field with a flag of its own: ``--to a@x --to b@x`` → ``"to": [...]``."""

    key: str
    many: bool = False
    flag_help: str = ""


@dataclass(frozen=True)
class Op:
    group: str
    name: str
    method: str
    path: str
    help: str
    query: tuple[str, ...] = ()
    body: bool = False
    fields: dict[str, Field] = field(default_factory=dict)
    fixed_body: dict[str, object] | None = None  # sent as is (enable, disable)
    destructive: bool = False  # asks, or needs --yes off a terminal
    idempotent: bool = False  # takes --idempotency-key
    example: str = ""

    @property
    def lists(self) -> bool:
        return self.method == "GET" and "after" in self.query

    @property
    def arguments(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def command(self) -> str:
        return f"{self.group} {self.name}".strip()


def _g(name: str, method: str, path: str, help: str, **more: object) -> Op:
    return Op("", name, method, path, help, **more)  # type: ignore[arg-type]
