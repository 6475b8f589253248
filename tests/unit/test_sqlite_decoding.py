"""Reading rows inline: the quick paths for instants and empty JSON documents give what
SQLAlchemy's own result processors give, for any stored value."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite

from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import RowDecoder, _reading_shortcut
from mailbridge.storage.tables import Email

DIALECT = sqlite.dialect()
COLUMNS = table_of(Email).c


def _both(column: Any) -> tuple[Any, Any]:
    processor = column.type.dialect_impl(DIALECT).result_processor(DIALECT, None)
    return processor, _reading_shortcut(column, processor)


@settings(max_examples=300, deadline=None)
@given(instant=st.datetimes(timezones=st.just(UTC)))
def test_an_instant_reads_as_sqlalchemy_reads_it(instant: datetime) -> None:
    processor, quick = _both(COLUMNS.due_at)
    bind = COLUMNS.due_at.type.dialect_impl(DIALECT).bind_processor(DIALECT)
    assert bind is not None
    stored = bind(instant)
    assert quick(stored) == processor(stored) == instant
    assert quick(stored).tzinfo is UTC


@settings(max_examples=300, deadline=None)
@given(document=st.one_of(st.just([]), st.just({}), st.lists(st.emails()), st.none()))
def test_a_json_document_reads_as_sqlalchemy_reads_it(document: Any) -> None:
    processor, quick = _both(COLUMNS.to)
    stored = None if document is None else json.dumps(document)
    assert quick(stored) == processor(stored)
    if document == []:
        assert quick(stored) is not quick(stored)  # a list of its own each time


def test_the_decoder_uses_the_quick_paths() -> None:
    decoder = RowDecoder(table_of(Email), DIALECT)
    names = {decoder.keys[index]: decode.__name__ for index, decode in decoder._decoders}
    assert names["due_at"] == "instant" and names["to"] == "document"
