"""Composing writes a header that needs neither folding nor encoding as it is: the same
bytes the library's ``compat32`` folding gives, for every such value and every whole
message."""

from __future__ import annotations

import random
from email.policy import Compat32
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mailbridge.mail import compose as composing
from mailbridge.mail.compose import AttachmentPart, compose
from tests.unit.test_compose import DATE, UNSUBSCRIBE, email

LIBRARY = Compat32(linesep="\r\n", max_line_length=78, cte_type="8bit")
SHIPPED = composing._POLICY

# Every ASCII character but CR and LF, with spaces and tabs (where folding happens) and
# the vertical whitespace ``str.splitlines`` splits on weighted up.
ascii_text = st.text(
    alphabet=st.sampled_from([chr(code) for code in range(128) if chr(code) not in "\r\n"])
    | st.sampled_from([" ", " ", "\t", ";", ",", "\x0b", "\x0c", "\x1c", "=", "?"]),
    max_size=90,
)
names = st.sampled_from(["Subject", "To", "X-Entity-Ref-ID", "Content-Type", "X-A"])


@settings(max_examples=1000)
@given(names, ascii_text)
@example("Subject", "a\x0bb")
@example("Subject", "\x1c x")
@example("Subject", " leading and trailing ")
@example("X-Entity-Ref-ID", "x" * 61)
@example("X-Entity-Ref-ID", "x" * 60)
def test_a_header_is_written_as_the_library_writes_it(name: str, value: str) -> None:
    try:
        expected = LIBRARY.fold_binary(name, value)
    except Exception as exc:  # the library refuses it: so must we
        with pytest.raises(type(exc)):
            SHIPPED.fold_binary(name, value)
        return
    assert SHIPPED.fold_binary(name, value) == expected


@given(names, st.text(max_size=40))
def test_any_text_is_written_as_the_library_writes_it(name: str, value: str) -> None:
    try:
        expected = LIBRARY.fold_binary(name, value)
    except Exception as exc:
        with pytest.raises(type(exc)):
            SHIPPED.fold_binary(name, value)
        return
    assert SHIPPED.fold_binary(name, value) == expected


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"subject": "A subject long enough to be folded by the generator, past its 78 columns"},
        {"subject": "Grüße aus Köln", "to": ["Jürgen <j@corp.io>", "bo@corp.io"]},
        {"headers": {"X-Campaign": "spring  sale\t2026", "X-Long": "x " * 60}},
        {"marketing": True, "cc": ["cy@corp.io"], "reply_to": ["help@shop.io"]},
        {"html": None, "text": "Only text, with a very long line " + "y" * 1200},
    ],
)
def test_a_whole_message_is_byte_for_byte_the_libraries(
    fields: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    attachments = [AttachmentPart("report.pdf", "application/pdf", b"%PDF-1.4" * 50)]
    monkeypatch.setattr(composing, "_random", random.Random(7))
    shipped = compose(email(**fields), attachments, date=DATE, unsubscribe=UNSUBSCRIBE)
    monkeypatch.setattr(composing, "_POLICY", LIBRARY)
    monkeypatch.setattr(composing, "_random", random.Random(7))
    library = compose(email(**fields), attachments, date=DATE, unsubscribe=UNSUBSCRIBE)
    assert shipped == library
