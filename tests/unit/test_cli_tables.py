"""What a list looks like on a terminal: a table, or a word when there is nothing."""

from __future__ import annotations

import io

from rich.console import Console

from mailbridge.cli.client._output import table


def _shown(items: list[object]) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(table(items))
    return console.export_text()


def test_an_empty_list_says_so() -> None:
    assert _shown([]).strip() == "nothing here"


def test_a_list_is_a_table_with_its_ids_whole() -> None:
    item_id = "01a21cde-eef0-7000-b1cd-147bae92e3be"
    shown = _shown([{"object": "domain", "id": item_id, "name": "shop.io", "records": []}])
    assert item_id in shown and "shop.io" in shown
    assert "object" not in shown and "records" not in shown
