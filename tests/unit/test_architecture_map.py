"""The map stays true: every file docs/architecture.md names exists, and every context
package of mailbridge/services/ (and every top-level part of mailbridge/) is on it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
# A file or folder named in backticks: `runner/delivery.py`, `_fanout.py`, `cli/client/`.
NAMED = re.compile(r"`([A-Za-z0-9_./-]+(?:\.py|/))`")
SEARCHED = ("mailbridge", "tests", "examples", "bench")


def named_paths() -> set[str]:
    return {match for match in NAMED.findall(MAP.read_text(encoding="utf-8")) if "*" not in match}


def exists(name: str) -> bool:
    """A path with a folder in it resolves from the repository or from ``mailbridge/``; a
    bare file name is some module of the tree (the doc names it next to its context)."""
    name = name.removeprefix("/")
    if "/" in name.rstrip("/"):
        return any((base / name).exists() for base in (ROOT, ROOT / "mailbridge"))
    if name.endswith("/"):
        return any((ROOT / top).rglob(name.rstrip("/")) for top in SEARCHED)
    return any(next((ROOT / top).rglob(name), None) is not None for top in SEARCHED)


def test_every_file_the_map_names_exists() -> None:
    names = named_paths()
    assert len(names) > 50  # the map names its modules; an empty match proves nothing
    missing = sorted(name for name in names if not exists(name))
    assert missing == [], f"docs/architecture.md names what is not there: {missing}"


def test_every_context_and_top_level_part_is_on_the_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    contexts = sorted(
        path.parent.name for path in (ROOT / "mailbridge" / "services").glob("*/__init__.py")
    )
    assert len(contexts) >= 10
    unnamed = [name for name in contexts if f"**{name}**" not in text]
    assert unnamed == [], f"contexts the map does not describe: {unnamed}"
    parts = sorted(
        path.parent.name
        for path in (ROOT / "mailbridge").glob("*/__init__.py")
        if path.parent.name != "__pycache__"
    )
    absent = [name for name in parts if f"{name}/" not in text]
    assert absent == [], f"top-level packages the map leaves out: {absent}"
