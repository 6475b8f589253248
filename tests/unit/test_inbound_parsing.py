"""Inbound mail, a received message's fields: read from the cheap ``compat32`` tree, they must
be what ``policy.default`` (the modern API, the oracle here) reads, on a corpus of real-world
shapes; what reports say must not depend on which tree they were read from; and parsing never
raises."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from email.message import EmailMessage, Message
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailbridge.mail.inbound_reports import parse_report, referenced_message_ids
from mailbridge.services.inbound._parsing import decoded, parse

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "inbound"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _parts(message: Message, parent: Message | None = None, index: int = 0) -> Any:
    """The leaves of the MIME tree with their parent and position; a message/* part is a
    leaf (what is inside an attached message is not the outer message's)."""
    if message.get_content_maintype() == "multipart" and message.is_multipart():
        for position, part in enumerate(message.get_payload()):
            yield from _parts(part, message, position)
    else:
        yield message, parent, index


def _safe(filename: str) -> str:
    """What a file system takes: no path separators, no characters Windows refuses."""
    return " ".join(re.sub(r'[\x00-\x1f/\\:*?"<>|]', " ", filename).split())


def _as_sent(raw: bytes, parent: Message | None, index: int) -> bytes:
    """The body of the ``index``-th part of ``parent`` cut from the raw bytes at its
    boundary lines (the line end before a boundary is the boundary's, RFC 2046 §5.1.1)."""
    assert parent is not None
    delimiter = re.escape(b"--" + str(parent.get_boundary()).encode())
    segments = re.split(rb"\r?\n" + delimiter + rb"(?:--)?[ \t]*(?=\r?\n)", raw)
    part = segments[index + 1].split(b"\n", 1)[1]  # after the boundary line's end
    return re.split(rb"\r?\n\r?\n", part, maxsplit=1)[1]  # after the part's headers


def _oracle(raw: bytes) -> dict[str, Any]:
    """The fields as ``policy.default`` reads them."""
    message = message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)

    def text(value: object) -> str | None:
        return None if value is None else str(value).replace("\x00", "")

    def body(kind: str) -> str | None:
        part = message.get_body(preferencelist=(kind,))
        content = part.get_content() if part is not None else None
        return content.replace("\x00", "") if isinstance(content, str) else None

    headers: dict[str, Any] = {}
    for name, value in message.items():
        headers.setdefault(name.lower(), []).append(text(value))
    attachments: list[tuple[str | None, str, str | None, Any]] = []
    for part, parent, index in _parts(message):
        filename = part.get_filename()
        if part.get_content_type() == "message/rfc822":  # one attachment, the bytes as sent
            inner = part.get_payload(0)
            attachments.append((
                text(filename) or _safe(f"{inner['Subject']}.eml"), "message/rfc822",
                text(part.get("Content-ID")), _as_sent(raw, parent, index),
            ))  # fmt: skip
            continue
        if part.get_content_disposition() != "attachment" and filename is None:
            continue
        attachments.append((
            text(filename), part.get_content_type(), text(part.get("Content-ID")),
            part.get_payload(decode=True),
        ))  # fmt: skip
    return {
        "from": text(message.get("From")),
        "to": [a for _n, a in getaddresses([str(v) for v in message.get_all("To", [])]) if a],
        "cc": [a for _n, a in getaddresses([str(v) for v in message.get_all("Cc", [])]) if a],
        "subject": text(message.get("Subject")),
        "message_id": text(message.get("Message-ID")),  # the policy keeps a fold's space
        "references": referenced_message_ids(message),
        "headers": {k: v[0] if len(v) == 1 else v for k, v in headers.items()},
        "text": body("plain"),
        "html": body("html"),
        "attachments": attachments,
    }


def _fields(raw: bytes) -> dict[str, Any]:
    parsed = parse(raw)
    assert parsed.parse_error is None
    return {
        "from": parsed.from_address, "to": parsed.to, "cc": parsed.cc,
        "subject": parsed.subject, "message_id": parsed.message_id,
        "references": parsed.references, "headers": parsed.headers,
        "text": parsed.text, "html": parsed.html,
        "attachments": [
            (a.filename, a.content_type, a.content_id, a.content) for a in parsed.attachments
        ],
    }  # fmt: skip


def _letter(**headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = headers.pop("From", "Ann <ann@corp.io>")
    message["To"] = headers.pop("To", "hello@shop.io")
    message["Subject"] = headers.pop("Subject", "A question")
    message["Message-ID"] = "<q1@corp.io>"
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    return message


def _built() -> dict[str, bytes]:
    samples: dict[str, bytes] = {}
    plain = _letter()
    plain.set_content("Hello,\nis the blue one in stock?\n")
    samples["plain"] = plain.as_bytes()

    accents = _letter(
        From="Jürgen Groß <jurgen@corp.de>", To="Zoë <zoe@shop.io>, \"Doe, John\" <j@shop.io>",
        Cc="Ólafur <o@shop.io>", Subject="Grüße aus Köln — ein Angebot für Sie 😀",
    )  # fmt: skip
    accents.set_content("Schöne Grüße\n", charset="utf-8")
    samples["encoded words"] = accents.as_bytes()

    latin = _letter()
    latin.set_content("Très cher, voilà ma réponse.\n".encode("latin-1"), "text", "plain",
                      cte="quoted-printable", params={"charset": "iso-8859-1"})  # fmt: skip
    samples["latin-1 body"] = latin.as_bytes()

    alternative = _letter(In_Reply_To="<abc@shop.io>", References="<x@shop.io> <abc@shop.io>")
    alternative.set_content("Plain words\n")
    alternative.add_alternative("<p>Rich <b>words</b></p>\n", subtype="html")
    samples["alternative reply"] = alternative.as_bytes()

    related = _letter()
    related.set_content("See the picture\n")
    related.add_alternative('<p>See <img src="cid:logo@corp.io"></p>\n', subtype="html")
    html_part = related.get_body(preferencelist=("html",))
    assert isinstance(html_part, EmailMessage)
    html_part.add_related(PNG, "image", "png", cid="<logo@corp.io>")
    related.add_attachment(b"%PDF-1.4 quote", maintype="application", subtype="pdf",
                           filename="Angebot für Köln.pdf")  # fmt: skip
    related.add_attachment("a,b\n1,2\n", subtype="csv", filename="prices.csv")
    samples["related with attachments"] = related.as_bytes()

    html_only = _letter()
    html_only.set_content("<h1>Only HTML</h1>\n", subtype="html")
    samples["html only"] = html_only.as_bytes()

    samples["8-bit headers (SMTPUTF8)"] = (
        "From: Zoë <zoë@corp.io>\r\nTo: hello@shop.io\r\nSubject: Grüße\r\n"
        "Message-ID: <u8@corp.io>\r\nContent-Type: text/plain; charset=utf-8\r\n"
        "Content-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln\r\n"
    ).encode()
    samples["folded headers"] = (
        b"From: Ann\r\n <ann@corp.io>\r\nTo: a@shop.io,\r\n\tb@shop.io\r\n"
        b"Subject: a subject that was\r\n folded twice\r\n  over\r\n"
        b"X-Custom: one\r\nX-Custom: two\r\n\r\nbody\r\n"
    )
    samples["no body, no headers to speak of"] = b"Subject: =?utf-8?q?caf=C3=A9?=\r\n\r\n"
    return samples


CASES = {
    **_built(),
    **{path.name: path.read_bytes() for path in sorted(CORPUS.glob("*.eml"))},
}


ADDRESS_HEADERS = ("from", "to", "cc", "bcc", "sender", "reply-to", "return-path")


def _same_structured(name: str, kept: str, rewritten: str) -> bool:
    """A structured header keeps the form it was written in; the modern policy rewrites it in
    its own (quotes, spacing). Same addresses, or the same value and parameters, is the same."""
    if name in ADDRESS_HEADERS:  # the modern policy drops comments: "a@b.io (Mail System)"
        return [a for _n, a in getaddresses([kept])] == [a for _n, a in getaddresses([rewritten])]
    if name in ("date", "resent-date"):  # ... and a date's "(PST)"
        return parsedate_to_datetime(kept) == parsedate_to_datetime(rewritten)
    if name in ("message-id", "in-reply-to", "references"):  # ... but keeps a fold's space
        return kept == rewritten.strip()
    if name.startswith("content-"):

        def params(value: str) -> list[tuple[str, str]]:
            holder = Message()
            holder["Content-Type"] = value
            return [(k.lower(), v) for k, v in holder.get_params() or []]

        return params(kept) == params(rewritten)
    return False


@pytest.mark.parametrize("name", sorted(CASES))
def test_fields_read_as_the_modern_policy_reads_them(name: str) -> None:
    raw = CASES[name]
    expected, found = _oracle(raw), _fields(raw)
    if expected["message_id"] is not None:
        expected["message_id"] = expected["message_id"].strip()
    if found["from"] != expected["from"]:
        assert _same_structured("from", found["from"], expected["from"])
        found["from"] = expected["from"]
    for header, value in found["headers"].items():
        other = expected["headers"].get(header)
        if value != other and other is not None:
            pairs = zip(value, other, strict=True) if isinstance(value, list) else [(value, other)]
            assert all(a == b or _same_structured(header, a, b) for a, b in pairs), header
            found["headers"][header] = other
    assert found == expected


def test_the_built_samples_say_what_they_should() -> None:
    accents = parse(CASES["encoded words"])
    assert accents.subject == "Grüße aus Köln — ein Angebot für Sie 😀"
    assert accents.from_address == "Jürgen Groß <jurgen@corp.de>"
    assert accents.to == ["zoe@shop.io", "j@shop.io"]
    related = parse(CASES["related with attachments"])
    # The inline picture has neither a filename nor an attachment disposition: not an attachment.
    assert [a.filename for a in related.attachments] == ["Angebot für Köln.pdf", "prices.csv"]
    assert related.attachments[0].content == b"%PDF-1.4 quote"
    assert related.html is not None and "cid:logo@corp.io" in related.html
    assert parse(CASES["latin-1 body"]).text == "Très cher, voilà ma réponse.\n"
    assert parse(CASES["8-bit headers (SMTPUTF8)"]).subject == "Grüße"
    assert parse(CASES["folded headers"]).headers["x-custom"] == ["one", "two"]
    assert parse(CASES["alternative reply"]).references == ["<abc@shop.io>", "<x@shop.io>"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_reports_read_the_same_from_either_tree(name: str) -> None:
    raw = CASES[name]
    modern = message_from_bytes(raw, policy=policy.default)
    cheap = parse(raw).message
    assert isinstance(modern, EmailMessage) and isinstance(cheap, Message)
    recipients = ["bounces+x@mail.shop.io"]
    assert parse_report(raw, recipients, cheap) == parse_report(raw, recipients, modern)


def test_an_encoded_word_that_does_not_decode_stays_as_it_came() -> None:
    assert decoded("=?no-such-charset?q?abc?=") == "=?no-such-charset?q?abc?="
    assert decoded("plain\r\n value") == "plain value"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_parsing_never_raises(raw: bytes) -> None:
    parsed = parse(raw)
    assert parsed.parse_error is None or parsed.parse_error


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(CASES)),
    st.lists(st.tuples(st.integers(0, 4000), st.binary(min_size=1, max_size=12)), max_size=6),
)
def test_mangled_samples_never_raise(name: str, edits: list[tuple[int, bytes]]) -> None:
    raw = bytearray(CASES[name])
    for position, data in edits:
        raw[position : position + len(data)] = data
    parse(bytes(raw))
