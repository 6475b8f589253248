"""Composing the message an email row becomes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

import pytest

from mailbridge.mail.compose import AttachmentPart, Unsubscribe, compose
from mailbridge.storage.tables import Email

DATE = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
UNSUBSCRIBE = Unsubscribe("https://mb.example/t/u/token", "unsubscribe@send.shop.io?subject=x")


def email(**fields: Any) -> Email:
    values: dict[str, Any] = {
        "id": "01900000-0000-7000-8000-000000000001",
        "team_id": "team",
        "from_address": "Shop <news@shop.io>",
        "from_email": "news@shop.io",
        "to": ["Ann <ann@corp.io>"],
        "cc": [],
        "bcc": [],
        "reply_to": [],
        "subject": "Hello",
        "html": "<p>Hello</p>",
        "text": "Hello",
        "headers": {},
        "marketing": False,
        "message_id": "<01900000-0000-7000-8000-000000000001@shop.io>",
    }
    values.update(fields)
    return Email(**values)


def parse(raw: bytes) -> EmailMessage:
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    return message


def structure(message: EmailMessage) -> Any:
    if message.is_multipart():
        parts = [structure(part) for part in message.iter_parts()]  # type: ignore[arg-type]
        return (message.get_content_type(), parts)
    return message.get_content_type()


def test_headers() -> None:
    raw = compose(
        email(
            to=["Ann <ann@corp.io>", "bo@corp.io"], cc=["cy@corp.io"], bcc=["secret@hidden.io"],
            reply_to=["help@shop.io"],
        ),
        date=DATE,
    )  # fmt: skip
    message = parse(raw)
    assert message["From"] == "Shop <news@shop.io>"
    assert message["To"] == "Ann <ann@corp.io>, bo@corp.io"
    assert message["Cc"] == "cy@corp.io"
    assert message["Reply-To"] == "help@shop.io"
    assert message["Subject"] == "Hello"
    assert message["Date"] == "Wed, 04 Mar 2026 05:06:07 +0000"
    assert message["Message-ID"] == "<01900000-0000-7000-8000-000000000001@shop.io>"
    assert message["MIME-Version"] == "1.0"
    assert message["X-Entity-Ref-ID"] == "01900000-0000-7000-8000-000000000001"
    assert message["Bcc"] is None and b"secret@hidden.io" not in raw
    assert message["List-Unsubscribe"] is None


def test_lines_end_in_crlf_and_stay_short() -> None:
    raw = compose(email(html="<p>" + "x" * 5000 + "</p>", text="é" * 3000), date=DATE)
    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert max(len(line) for line in raw.split(b"\r\n")) <= 998
    message = parse(raw)
    text, html = message.iter_parts()
    assert text.get_content() == "é" * 3000
    assert html.get_content() == "<p>" + "x" * 5000 + "</p>"
    assert text["Content-Transfer-Encoding"] == "quoted-printable"


@pytest.mark.parametrize(
    ("fields", "attachments", "expected"),
    [
        ({"html": None}, [], "text/plain"),
        ({"text": None}, [], "text/html"),
        ({}, [], ("multipart/alternative", ["text/plain", "text/html"])),
        (
            {},
            [AttachmentPart("logo.png", "image/png", b"png", "logo")],
            (
                "multipart/alternative",
                ["text/plain", ("multipart/related", ["text/html", "image/png"])],
            ),
        ),
        (
            {"text": None},
            [AttachmentPart("a.pdf", "application/pdf", b"pdf")],
            ("multipart/mixed", ["text/html", "application/pdf"]),
        ),
        (
            {},
            [
                AttachmentPart("logo.png", "image/png", b"png", "logo"),
                AttachmentPart("a.pdf", "application/pdf", b"pdf"),
            ],
            (
                "multipart/mixed",
                [
                    (
                        "multipart/alternative",
                        ["text/plain", ("multipart/related", ["text/html", "image/png"])],
                    ),
                    "application/pdf",
                ],
            ),
        ),
    ],
)
def test_structure(
    fields: dict[str, Any], attachments: list[AttachmentPart], expected: Any
) -> None:
    assert structure(parse(compose(email(**fields), attachments, date=DATE))) == expected


def test_inline_images_and_attachments_carry_their_bytes_and_names() -> None:
    logo = AttachmentPart("logo.png", "image/png", bytes(range(256)), "<logo>")
    résumé = AttachmentPart("résumé.pdf", "application/pdf", b"%PDF")
    message = parse(compose(email(html='<img src="cid:logo">'), [logo, résumé], date=DATE))
    alternative, attached = message.iter_parts()
    _text, related = alternative.iter_parts()
    _html, image = related.iter_parts()
    assert image["Content-ID"] == "<logo>"
    assert image.get_content_disposition() == "inline" and image.get_filename() == "logo.png"
    assert image.get_content() == bytes(range(256))
    assert attached.get_content_disposition() == "attachment"
    assert attached.get_filename() == "résumé.pdf"
    assert attached.get_content() == b"%PDF"


def test_an_image_with_a_content_id_but_no_html_is_attached() -> None:
    message = parse(
        compose(email(html=None), [AttachmentPart("l.png", "image/png", b"p", "l")], date=DATE)
    )
    assert structure(message) == ("multipart/mixed", ["text/plain", "image/png"])


def test_one_click_unsubscribe_on_marketing_mail_only() -> None:
    marketing = parse(compose(email(marketing=True), date=DATE, unsubscribe=UNSUBSCRIBE))
    assert marketing["List-Unsubscribe"] == (
        "<https://mb.example/t/u/token>, <mailto:unsubscribe@send.shop.io?subject=x>"
    )
    assert marketing["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    transactional = parse(compose(email(marketing=False), date=DATE, unsubscribe=UNSUBSCRIBE))
    assert transactional["List-Unsubscribe"] is None
    assert transactional["List-Unsubscribe-Post"] is None


def test_custom_headers_never_replace_ours() -> None:
    raw = compose(
        email(
            headers={
                "X-Campaign": "spring",
                "X-Note": "café crème",
                "In-Reply-To": "<prev@shop.io>",
                "Subject": "forged",
                "bcc": "spy@evil.io",
                "Message-ID": "<forged@evil.io>",
                "List-Unsubscribe": "<https://evil.io>",
                "X-Injected": "a\r\nBcc: spy@evil.io",
                "Bad Name": "x",
                "X-Number": 7,
            }
        ),
        date=DATE,
    )
    message = parse(raw)
    assert message["X-Campaign"] == "spring"
    assert message["X-Note"] == "café crème"
    assert message["In-Reply-To"] == "<prev@shop.io>"
    assert message["X-Number"] == "7"
    assert message.get_all("Subject") == ["Hello"]
    assert message.get_all("Message-ID") == ["<01900000-0000-7000-8000-000000000001@shop.io>"]
    assert message["Bcc"] is None and message["List-Unsubscribe"] is None
    assert message["X-Injected"] is None and b"spy@evil.io" not in raw
    assert b"Bad Name" not in raw


def test_non_ascii_headers_are_encoded_and_read_back() -> None:
    raw = compose(
        email(
            from_address="Zoë Café <news@shop.io>",
            to=["Ünal <unal@corp.io>", "ann@bücher.de"],
            subject="Grüße — " + "ä" * 80,
        ),
        date=DATE,
    )
    header_block = raw.split(b"\r\n\r\n", 1)[0]
    assert header_block.isascii()
    message = parse(raw)
    assert message["Subject"] == "Grüße — " + "ä" * 80
    assert message["From"].addresses[0].display_name == "Zoë Café"
    assert [a.addr_spec for a in message["To"].addresses] == [
        "unal@corp.io", "ann@xn--bcher-kva.de",
    ]  # fmt: skip
    assert all(len(line) <= 78 for line in header_block.split(b"\r\n"))


def test_the_html_hook_rewrites_the_html() -> None:
    message = parse(
        compose(
            email(text=None, html="<a href='https://x.io'>x</a>"),
            date=DATE,
            transform_html=lambda html: html.replace("https://x.io", "https://t.io/c/1"),
        )
    )
    assert message.get_content() == "<a href='https://t.io/c/1'>x</a>"


def test_boundaries_differ_between_messages() -> None:
    first = compose(email(), date=DATE)
    second = compose(email(), date=DATE)
    boundary = re.compile(rb'boundary="([^"]+)"')
    found_first, found_second = boundary.search(first), boundary.search(second)
    assert found_first is not None and found_second is not None
    assert found_first.group(1) != found_second.group(1)


def test_an_attached_message_goes_7bit_so_readers_open_it_else_base64() -> None:
    original = b"From: ann@corp.io\r\nSubject: Hello\r\n\r\nPlain words\r\n"
    raw = compose(
        email(), [AttachmentPart("forwarded_message.eml", "message/rfc822", original)], date=DATE
    )
    message = parse(raw)
    [attached] = [part for part in message.iter_parts() if part.get_filename()]
    assert attached["Content-Transfer-Encoding"] == "7bit"
    inner = attached.get_content()
    assert inner["Subject"] == "Hello" and inner.get_content().strip() == "Plain words"
    assert b"\r\n\r\nPlain words\r\n" in raw  # CRLF throughout, once

    for odd in (original.replace(b"words", "wörds".encode()), b"x" * 1200):
        raw = compose(email(), [AttachmentPart("m.eml", "message/rfc822", odd)], date=DATE)
        [attached] = [part for part in parse(raw).iter_parts() if part.get_filename()]
        assert attached["Content-Transfer-Encoding"] == "base64", odd[:20]
