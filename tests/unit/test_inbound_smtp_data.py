"""The listener's DATA: only <CRLF>.<CRLF> ends it, and a refusal names its real cause — a
bare LF (RFC 5321 §2.3.8) or a line over 1,000 octets (§4.5.3.1.6) — after the whole
message was read, none of it kept. Pieces come as the stream reader hands them over: up to
each ".<CRLF>", and cut anywhere else."""

from __future__ import annotations

import re

import pytest

from mailbridge.services.inbound._smtp import BARE_LF, LINE_TOO_LONG, TOO_MUCH, DataReader


def pieces(data: bytes, cut: int = 0) -> list[bytes]:
    """``data`` as readuntil(".<CRLF>") hands it over; longer stretches cut every ``cut``
    octets (never inside a ".<CRLF>": the reader keeps the last two octets back)."""
    found = [piece for piece in re.split(rb"(?<=\.\r\n)", data) if piece]
    if not cut:
        return found
    cuts: list[bytes] = []
    for piece in found:
        body, end = (piece[:-3], piece[-3:]) if piece.endswith(b".\r\n") else (piece, b"")
        cuts.extend(body[start : start + cut] for start in range(0, len(body), cut))
        if end:
            cuts.append(end)
    return [piece for piece in cuts if piece]


def read(data: bytes, cut: int = 0, limit: int | None = None) -> tuple[DataReader, bytes]:
    """The reader after the end of the data, and what came after the end."""
    reader, rest = DataReader(limit), pieces(data, cut)
    while rest:
        if reader.take(rest.pop(0)):
            return reader, b"".join(rest)
    raise AssertionError("the data never ended")


CUTS = [0, 1, 2, 3, 7, 1000]


@pytest.mark.parametrize("cut", CUTS)
def test_a_message_in_crlf_lines_is_kept_with_its_dots_unstuffed(cut: int) -> None:
    sent = b"..first\r\nSubject: a.\r\n\r\n..leading dot\r\n...two\r\nend.\r\n.\r\nQUIT\r\n"
    reader, rest = read(sent, cut)
    assert reader.refusal is None and rest == b"QUIT\r\n"
    assert reader.content() == b".first\r\nSubject: a.\r\n\r\n.leading dot\r\n..two\r\nend.\r\n"


@pytest.mark.parametrize("cut", CUTS)
def test_an_empty_message_ends_at_once(cut: int) -> None:
    assert read(b".\r\nQUIT\r\n", cut)[0].content() == b""
    assert read(b"\r\n.\r\n", cut)[0].content() == b"\r\n"


@pytest.mark.parametrize("cut", CUTS)
def test_a_bare_lf_is_refused_by_its_name(cut: int) -> None:
    reader, _rest = read(b"Subject: a\n\nbody\r\n.\r\n", cut)
    assert reader.refusal == BARE_LF and reader.content() == b""
    assert "Bare LF" in BARE_LF and "2.3.8" in BARE_LF and BARE_LF.startswith("550 ")


@pytest.mark.parametrize("cut", CUTS)
def test_no_bare_lf_dot_ends_the_data_so_nothing_is_smuggled(cut: int) -> None:
    smuggled = (
        b"Subject: first\r\n\r\nhello\n.\n"  # <LF>.<LF>
        b"MAIL FROM:<ceo@bank.example>\r\nRCPT TO:<x@shop.io>\r\nDATA\r\n"
        b"Subject: smuggled\r\n\r\nsend money\n.\r\n"  # <LF>.<CRLF>
        b"still data\r.\r\n"  # <CR>.<CRLF>
        b"last\r\n.\r\n"
    )
    reader, rest = read(smuggled + b"QUIT\r\n", cut)
    assert rest == b"QUIT\r\n"  # one message, ended once, at the real <CRLF>.<CRLF>
    assert reader.refusal == BARE_LF and reader.content() == b""


@pytest.mark.parametrize("cut", CUTS)
def test_a_line_over_1000_octets_is_refused_as_too_long(cut: int) -> None:
    fits = b"x" * 998 + b"\r\n"
    assert read(fits + b".\r\n", cut)[0].refusal is None
    assert read(b"." + fits + b".\r\n", cut)[0].refusal is None  # with a transparency dot
    reader, _rest = read(b"x" * 1500 + b"\r\nnext\r\n.\r\n", cut)
    assert reader.refusal == LINE_TOO_LONG and reader.content() == b""
    assert "Line too long" in LINE_TOO_LONG and "4.5.3.1.6" in LINE_TOO_LONG


def test_bare_lf_is_named_before_a_long_line_and_size_last() -> None:
    assert read(b"x" * 2000 + b"\nend\r\n.\r\n")[0].refusal == BARE_LF
    assert read(b"x" * 1200 + b"\r\n.\r\n", limit=100)[0].refusal == LINE_TOO_LONG
    reader, _rest = read((b"x" * 80 + b"\r\n") * 3 + b".\r\n", limit=200)
    assert reader.refusal == TOO_MUCH and reader.content() == b""
