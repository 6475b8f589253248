"""The README names every webhook event the service sends, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from mailbridge.services.webhooks import WEBHOOK_EVENTS

README = Path(__file__).resolve().parents[2] / "README.md"


def named_events() -> set[str]:
    text = README.read_text(encoding="utf-8")
    paragraph = text[text.index("\nEvents: ") : text.index("Each is POSTed")]
    names: set[str] = set()
    for spelled in re.findall(r"`([a-z_.|]+)`", paragraph):
        stem, _, alternatives = spelled.rpartition(".")
        names.update(f"{stem}.{each}" for each in alternatives.split("|"))
    return names


def test_the_readme_lists_every_webhook_event() -> None:
    assert named_events() == set(WEBHOOK_EVENTS)
