"""Inbound mail read within bounds, and read faithfully: nesting past ``MAX_DEPTH`` and parts
past ``MAX_PARTS`` stop the parse with the top-level headers kept and the reason said;
an attached message is one attachment, its bytes as sent; a broken boundary is named and
its body still read; only mail cheap to parse is parsed on the event loop."""

from __future__ import annotations

import base64
from email.message import Message

import pytest

from mailbridge.services.inbound._mime import (
    INLINE_CONTAINERS,
    MAX_DEPTH,
    MAX_PARTS,
    TOO_DEEP,
    TOO_MANY_PARTS,
    cheap_to_parse,
    header_block,
    read_tree,
)
from mailbridge.services.inbound._parsing import headers_only, parse, read
from tests import mime_samples
from tests.mime_samples import INNER, forwarded


@pytest.mark.parametrize("build", [mime_samples.nested, mime_samples.nested_messages])
def test_a_message_nested_2000_deep_stops_at_the_limit_with_its_headers(build: object) -> None:
    assert callable(build)
    raw = build(2000, "Deep, deeper")
    parsed = parse(raw)
    assert parsed.parse_error == TOO_DEEP
    assert (parsed.subject, parsed.from_address) == ("Deep, deeper", "Ann <ann@corp.io>")
    assert parsed.to == ["hello@shop.io"] and parsed.message_id == "<Deep,.deeper@corp.io>"
    # Stopped as the part below the limit began: not a level more was read.
    tree = read_tree(raw)
    levels, payload = 0, tree.root.get_payload()
    while isinstance(payload, list) and payload and isinstance(payload[0], Message):
        levels, payload = levels + 1, payload[0].get_payload()
    assert (tree.stopped, levels) == (TOO_DEEP, MAX_DEPTH)
    assert read(raw, ["hello@shop.io"])[1] is None  # cut short: it reports nothing


def test_nesting_up_to_the_limit_is_read_whole() -> None:
    parsed = parse(mime_samples.nested(MAX_DEPTH, body=b"at the bottom\r\n"))
    assert parsed.text == "at the bottom"
    # Boundaries never closed: named, the text read all the same.
    assert parsed.parse_error is not None and "CloseBoundaryNotFoundDefect" in parsed.parse_error
    assert parse(mime_samples.nested(MAX_DEPTH + 1)).parse_error == TOO_DEEP


def test_parts_past_the_cap_stop_the_parse_with_what_was_read() -> None:
    whole = parse(mime_samples.many_parts(MAX_PARTS - 1))
    assert whole.parse_error is None and len(whole.attachments) == MAX_PARTS - 1
    parsed = parse(mime_samples.many_parts(MAX_PARTS + 500, "so many"))
    assert parsed.parse_error == TOO_MANY_PARTS and parsed.subject == "so many"
    # The root and MAX_PARTS - 1 parts were read, each whole.
    assert len(parsed.attachments) == MAX_PARTS - 1
    assert parsed.attachments[-1].content == b"part %d" % (MAX_PARTS - 2)


def test_a_forwarded_message_is_one_attachment_with_the_bytes_as_sent() -> None:
    parsed = parse(forwarded())
    assert parsed.parse_error is None
    assert parsed.text == "outer words" and parsed.html is None  # nothing from inside it
    [attachment] = parsed.attachments  # not inner.pdf: that is the inner message's
    assert attachment.content_type == "message/rfc822"
    assert attachment.filename == "Quote Q3 Q4 final v2.eml"  # the inner Subject, made safe
    assert attachment.content == INNER


def test_an_attached_message_keeps_the_name_it_was_given() -> None:
    named = forwarded(part_headers=b'Content-Disposition: attachment; filename="original.eml"\r\n')
    assert [a.filename for a in parse(named).attachments] == ["original.eml"]
    untitled = forwarded(INNER.replace(b'Subject: Quote: Q3/Q4 "final" <v2>?\r\n', b""))
    assert [a.filename for a in parse(untitled).attachments] == ["message.eml"]


def test_an_attached_message_at_the_end_or_encoded_is_still_as_sent() -> None:
    unclosed = parse(forwarded(closed=False))  # runs to the end: every byte is its own
    assert [a.content for a in unclosed.attachments] == [INNER]
    assert unclosed.parse_error is not None and "CloseBoundaryNotFound" in unclosed.parse_error
    encoded = base64.encodebytes(INNER).replace(b"\n", b"\r\n")
    parsed = parse(forwarded(encoded, b"Content-Transfer-Encoding: base64\r\n"))
    assert [a.content for a in parsed.attachments] == [INNER]


def test_a_digest_lists_each_message_once() -> None:
    raw = (
        mime_samples.headers("digest")
        + b"Content-Type: multipart/digest; boundary=d\r\n\r\n"
        + b"--d\r\n\r\nSubject: one\r\n\r\nfirst\r\n"
        + b"--d\r\n\r\nSubject: two\r\n\r\nsecond\r\n--d--\r\n"
    )
    attachments = parse(raw).attachments
    assert [(a.filename, a.content_type) for a in attachments] == [
        ("one.eml", "message/rfc822"),
        ("two.eml", "message/rfc822"),
    ]
    assert attachments[1].content == b"Subject: two\r\n\r\nsecond"


def test_a_boundary_that_never_comes_is_named_and_the_body_read_as_text() -> None:
    raw = (
        mime_samples.headers("broken")
        + b'Content-Type: multipart/mixed; boundary="never"\r\n\r\n'
        + "Grüße, the body is here\r\n--other\r\nand goes on\r\n".encode()
    )
    parsed = parse(raw)
    assert parsed.parse_error is not None
    assert parsed.parse_error.startswith("StartBoundaryNotFoundDefect: ")
    assert parsed.text == "Grüße, the body is here\r\n--other\r\nand goes on\r\n"
    assert parsed.subject == "broken"


def test_a_multipart_without_a_boundary_is_named_and_read_as_text() -> None:
    raw = mime_samples.headers("none") + b"Content-Type: multipart/mixed\r\n\r\nplain words\r\n"
    parsed = parse(raw)
    assert parsed.parse_error is not None and "NoBoundaryInMultipartDefect" in parsed.parse_error
    assert parsed.text == "plain words\r\n"


def test_only_mail_cheap_to_parse_is_parsed_on_the_event_loop() -> None:
    ordinary = (
        mime_samples.headers()
        + b'Content-Type: multipart/alternative; boundary="a"\r\n\r\n'
        + b"--a\r\nContent-Type: text/plain\r\n\r\n"
        + b"A line of a message, as people write them.\r\n" * 60
        + b"--a\r\nContent-Type: text/html\r\n\r\n<p>words</p>\r\n--a--\r\n"
    )
    assert cheap_to_parse(ordinary)
    assert not cheap_to_parse(mime_samples.nested(20))
    assert not cheap_to_parse(mime_samples.many_parts(40))
    assert not cheap_to_parse(mime_samples.headers() + b"\r\n" + b"x" * 100_000)
    assert not cheap_to_parse(mime_samples.headers() + b"\r\n" + b"\r" * 5_000)
    # Folded, in any case: still a container each.
    level = b"CONTENT-TYPE:\r\n\tMultipart/Mixed; boundary=x\r\n\r\n--x\r\n"
    assert cheap_to_parse(level * INLINE_CONTAINERS)
    assert not cheap_to_parse(level * (INLINE_CONTAINERS + 1))


def test_a_message_not_parsed_keeps_its_top_level_header_fields() -> None:
    raw = mime_samples.headers("Grüße".encode().decode("latin-1")) + b"\r\n" + b"body\r\n" * 1000
    block = header_block(raw)
    assert block["To"] == "hello@shop.io" and block.get_payload() == ""
    parsed = headers_only(mime_samples.headers("=?utf-8?q?Gr=C3=BC=C3=9Fe?=") + b"\r\nx", "why")
    assert (parsed.parse_error, parsed.subject, parsed.to) == ("why", "Grüße", ["hello@shop.io"])
    assert parsed.text is None and parsed.attachments == []
    assert headers_only(b"", "why").parse_error == "why"
