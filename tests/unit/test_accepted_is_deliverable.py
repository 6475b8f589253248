"""Whatever the send endpoints accept can be delivered (issue 2 of 7, Must have 2).

For arbitrary text in every field that reaches a message — control characters, lone
surrogates, very long lines, non-ASCII — a request either fails validation, or its
message composes, DKIM-signs (and verifies) and parses back with exactly the headers
that were asked for: no header lost, none smuggled in through a line break.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_bytes as email_from_bytes
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

import dkim as dkimpy
import pydantic
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mailbridge.mail import dkim
from mailbridge.mail.addresses import parse_mailbox, parse_recipient
from mailbridge.mail.compose import AttachmentPart, compose
from mailbridge.services.email import SendEmailRequest
from mailbridge.storage.tables import Email

DATE = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
KEY = dkim.generate_key_pair(2048)
RECORD = dkim.txt_value(KEY.public_key).encode()

HOSTILE = ["\ud83d", "\udc00", "\x00", "\r", "\n", "\r\n", "\t", "\x07", "\x7f", "\u2028",
           "é", "ß", "🙂", "中", '"', ",", ";", ":", "<", ">", "=?utf-8?q?x?=", " "]  # fmt: skip
# Mostly text a person writes (any letter, quotes, punctuation: what must go through),
# sometimes hostile (what must be refused or carried safely), sometimes past a line's 998.
plain = st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=40)
hostile = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(HOSTILE)), max_size=8)
texts = st.one_of(
    plain,
    plain,
    plain,
    hostile.map("".join),
    st.text(alphabet="ab ", min_size=990, max_size=1100),
)
names = st.one_of(st.text(alphabet="abcAB éü.-'", max_size=20), texts)
locals_ = st.sampled_from(["news", "zoë", "a.b", "info+x"])


def parsed(raw: bytes) -> EmailMessage:
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    return message


def readable(value: object) -> str:
    """A parsed header as text: raw UTF-8 (RFC 6532) reads back as surrogate escapes."""
    return str(value).encode("utf-8", "surrogateescape").decode("utf-8")


def same_text(found: object, wanted: str) -> bool:
    """Equal but for folding whitespace, which carries no meaning in a header."""
    return " ".join(readable(found).split()) == " ".join(wanted.split())


@settings(
    max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)  # fmt: skip
@given(
    subject=texts, name=names, local=locals_, note=texts, filename=texts,
    content_type=st.one_of(st.sampled_from(["text/plain", "application/pdf"]), texts),
)  # fmt: skip
def test_whatever_is_accepted_composes_signs_and_reads_back(
    subject: str, name: str, local: str, note: str, filename: str, content_type: str
) -> None:
    body: dict[str, Any] = {
        "from": f"{name} <{local}@shop.io>",
        "to": [f"{name} <ann@corp.io>", "bo@corp.io"],
        "subject": subject,
        "html": "<p>Hello</p>",
        "headers": {"X-Note": note},
        "attachments": [{"filename": filename, "content": "aGk=", "content_type": content_type}],
    }
    try:
        request = SendEmailRequest.model_validate(body)
    except pydantic.ValidationError:
        assume(False)
    assert request.from_ is not None and request.subject is not None
    sender = parse_mailbox(request.from_)
    assume(sender is not None and all(parse_recipient(to) for to in request.to))
    assert sender is not None
    assume(request.subject.strip() != "")  # an empty subject is refused at preparation

    email = Email(
        id="01900000-0000-7000-8000-000000000001", from_address=sender.formatted(),
        to=list(request.to), cc=[], reply_to=[], subject=request.subject, html="<p>Hello</p>",
        text=None, headers=dict(request.headers), marketing=False,
        message_id="<01900000-0000-7000-8000-000000000001@shop.io>",
    )  # fmt: skip
    attachment = AttachmentPart(filename, content_type, b"hi", None)
    signed = dkim.sign(
        compose(email, [attachment], date=DATE), "shop.io", "mb", KEY.private_key_pem
    )
    assert dkimpy.verify(signed, dnsfunc=lambda _name, timeout=5: RECORD)

    message = parsed(signed)
    assert sorted(message.keys()) == sorted([
        "DKIM-Signature", "From", "To", "Subject", "Date", "Message-ID", "MIME-Version",
        "X-Entity-Ref-ID", "X-Note", "Content-Type",
    ])  # fmt: skip
    assert same_text(message["Subject"], subject)
    assert same_text(message["X-Note"], note)
    assert [address.addr_spec for address in message["To"].addresses] == [
        "ann@corp.io",
        "bo@corp.io",
    ]
    assert readable(message["From"].addresses[0].addr_spec) == sender.email
    attached = [part for part in message.iter_attachments()]
    assert len(attached) == 1
    assert attached[0].get_payload(decode=True) == b"hi"
    # compat32's reading of the RFC 2231 name (policy.default's drops some, e.g. "<>")
    legacy = [part for part in email_from_bytes(signed).walk() if part.get_filename() is not None]
    assert len(legacy) == 1 and same_text(legacy[0].get_filename() or "", filename)
