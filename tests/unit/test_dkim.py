"""DKIM keys and signing: a signature made with mail/dkim.py verifies against the TXT we publish."""

from __future__ import annotations

import base64
import re
import unittest.mock

import dkim as dkimpy
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from mailbridge.mail import dkim

MESSAGE = (
    b"From: Ada <ada@corp.io>\r\n"
    b"To: bob@elsewhere.dev\r\n"
    b"Subject: Hello\r\n"
    b"Date: Thu, 01 Jan 2026 00:00:00 +0000\r\n"
    b"Message-ID: <1@corp.io>\r\n"
    b"\r\n"
    b"Hi Bob,\r\nthe numbers are in.\r\n"
)


@pytest.fixture(scope="module")
def keys() -> dkim.DkimKeyPair:
    return dkim.generate_key_pair()


class FakeDns:
    """A dkimpy ``dnsfunc`` answering TXT lookups from a dict (fqdn without the final dot)."""

    def __init__(self, records: dict[str, str]) -> None:
        self.records = records
        self.asked: list[str] = []

    def __call__(self, name: bytes, timeout: int = 5) -> bytes | None:
        fqdn = name.decode().rstrip(".")
        self.asked.append(fqdn)
        value = self.records.get(fqdn)
        return value.encode() if value is not None else None


def test_key_pair_is_rsa_2048_and_the_public_half_matches(keys: dkim.DkimKeyPair) -> None:
    private = serialization.load_pem_private_key(keys.private_key_pem.encode(), password=None)
    assert isinstance(private, rsa.RSAPrivateKey)
    assert private.key_size == 2048
    published = serialization.load_der_public_key(base64.b64decode(keys.public_key))
    assert isinstance(published, rsa.RSAPublicKey)
    assert published.public_numbers() == private.public_key().public_numbers()
    assert keys.private_key_pem.startswith("-----BEGIN RSA PRIVATE KEY-----")


def test_txt_value_is_the_dkim1_record(keys: dkim.DkimKeyPair) -> None:
    assert keys.txt_value == f"v=DKIM1; k=rsa; p={keys.public_key}"
    assert dkim.published_key(keys.txt_value) == keys.public_key
    spaced = f"v=DKIM1;k=rsa; p= {keys.public_key[:50]} {keys.public_key[50:]} "
    assert dkim.published_key(spaced) == keys.public_key
    assert dkim.published_key("v=DKIM1; k=rsa") is None


def test_signed_message_verifies_against_the_published_record(keys: dkim.DkimKeyPair) -> None:
    signed = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem)
    assert signed.startswith(b"DKIM-Signature:") and signed.endswith(MESSAGE)
    assert b"d=corp.io" in signed and b"s=mailbridge" in signed
    dnsfunc = FakeDns({"mailbridge._domainkey.corp.io": keys.txt_value})
    assert dkimpy.verify(signed, dnsfunc=dnsfunc) is True
    assert dnsfunc.asked == ["mailbridge._domainkey.corp.io"]


def test_a_changed_body_or_another_key_fails(keys: dkim.DkimKeyPair) -> None:
    signed = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem)
    dnsfunc = FakeDns({"mailbridge._domainkey.corp.io": keys.txt_value})
    assert dkimpy.verify(signed.replace(b"numbers", b"figures"), dnsfunc=dnsfunc) is False
    other = dkim.generate_key_pair()
    assert (
        dkimpy.verify(signed, dnsfunc=FakeDns({"mailbridge._domainkey.corp.io": other.txt_value}))
        is False
    )


def test_bare_newlines_are_kept(keys: dkim.DkimKeyPair) -> None:
    message = MESSAGE.replace(b"\r\n", b"\n")
    signed = dkim.sign(message, "corp.io", "mailbridge", keys.private_key_pem)
    assert b"\r\n" not in signed and signed.endswith(message)
    dnsfunc = FakeDns({"mailbridge._domainkey.corp.io": keys.txt_value})
    assert dkimpy.verify(signed, dnsfunc=dnsfunc) is True


def test_a_bad_key_is_a_dkim_error() -> None:
    with pytest.raises(dkim.DkimError):
        dkim.sign(MESSAGE, "corp.io", "mailbridge", "not a key")


def test_the_signature_is_byte_for_byte_dkimpys_own(
    keys: dkim.DkimKeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same canonicalization, header list, layout and (deterministic PKCS#1 v1.5) RSA
    result as dkimpy's pure-Python signer: only the arithmetic moved to OpenSSL."""
    timestamp = 1_767_225_600
    monkeypatch.setattr(dkimpy.time, "time", lambda: timestamp)
    reference = dkimpy.sign(
        MESSAGE, b"mailbridge", b"corp.io", keys.private_key_pem.encode(),
        canonicalize=dkim.CANONICALIZATION, include_headers=dkim.signed_header_names(MESSAGE),
    )  # fmt: skip
    ours = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem, signed_at=timestamp)
    assert ours == reference + MESSAGE


def test_one_click_unsubscribe_and_the_feedback_id_are_signed(keys: dkim.DkimKeyPair) -> None:
    """RFC 8058 §4: a receiver honours one-click unsubscribe only when both List-*
    fields are covered by a valid signature; Gmail reads Feedback-ID from signed mail."""
    message = MESSAGE.replace(
        b"\r\n\r\n",
        b"\r\nList-Unsubscribe: <https://shop.io/u/1>\r\n"
        b"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\nFeedback-ID: c1:shop\r\n\r\n",
        1,
    )
    signed = dkim.sign(message, "corp.io", "mailbridge", keys.private_key_pem)
    names = dkim.signed_header_names(message)
    assert {b"list-unsubscribe", b"list-unsubscribe-post", b"feedback-id"} <= set(names)
    dnsfunc = FakeDns({"mailbridge._domainkey.corp.io": keys.txt_value})
    assert dkimpy.verify(signed, dnsfunc=dnsfunc) is True
    tampered = signed.replace(b"List-Unsubscribe=One-Click", b"List-Unsubscribe=Two-Click")
    assert dkimpy.verify(tampered, dnsfunc=dnsfunc) is False


def test_the_signature_covers_the_headers_that_matter(keys: dkim.DkimKeyPair) -> None:
    signed = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem)
    header = signed.split(b"\r\n\r\n", 1)[0].split(b"\r\nFrom:", 1)[0]
    tags = dict(
        tag.strip().split(b"=", 1) for tag in b"".join(header.split(b"\r\n")).split(b";")[:-1]
    )
    assert tags[b"DKIM-Signature: v"] == b"1"
    assert tags[b"a"] == b"rsa-sha256" and tags[b"c"] == b"relaxed/relaxed"
    assert set(tags[b"h"].replace(b" ", b"").split(b":")) >= {
        b"from", b"to", b"subject", b"date", b"message-id",
    }  # fmt: skip
    # From is signed once more than it occurs, so a second From breaks the signature.
    assert tags[b"h"].replace(b" ", b"").split(b":").count(b"from") == 2


def test_a_changed_subject_fails(keys: dkim.DkimKeyPair) -> None:
    signed = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem)
    dnsfunc = FakeDns({"mailbridge._domainkey.corp.io": keys.txt_value})
    assert (
        dkimpy.verify(signed.replace(b"Subject: Hello", b"Subject: Hullo"), dnsfunc=dnsfunc)
        is False
    )


def test_keys_are_loaded_once(keys: dkim.DkimKeyPair) -> None:
    dkim._private_key.cache_clear()
    for _ in range(3):
        dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem)
    info = dkim._private_key.cache_info()
    assert (info.misses, info.hits) == (1, 2)


async def test_signing_off_the_event_loop_gives_the_same_signature(
    keys: dkim.DkimKeyPair,
) -> None:
    direct = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem, signed_at=1e9)
    threaded = await dkim.sign_off_loop(
        MESSAGE, "corp.io", "mailbridge", keys.private_key_pem, signed_at=1e9
    )
    assert threaded == direct
    with pytest.raises(dkim.DkimError):
        await dkim.sign_off_loop(MESSAGE, "corp.io", "mailbridge", "not a key")


# Header names: the ones signed by default (in any case), others, and a repeated From.
_NAMES = st.sampled_from([
    b"From", b"from", b"To", b"Cc", b"Subject", b"Date", b"Message-ID", b"Reply-To",
    b"MIME-Version", b"Content-Type", b"List-Unsubscribe", b"X-Entity-Ref-ID", b"X-Custom",
])  # fmt: skip
# Text with what relaxed canonicalization changes: tabs, runs of spaces, trailing space.
_TEXT = st.text(alphabet=st.sampled_from(list("ab= ;<>@.\t")), max_size=30).map(str.encode)
_BODY_LINE = st.one_of(
    st.sampled_from([b"plain words", b"two  spaces", b"a\ttab", b"trailing ", b"", b"=3D"]),
    st.text(alphabet=st.sampled_from(list("xy \t.=")), max_size=40).map(str.encode),
)


@st.composite
def _messages(draw: st.DrawFn) -> bytes:
    linesep = draw(st.sampled_from([b"\r\n", b"\n"]))
    headers = [b"From: " + draw(_TEXT)]
    for name, value, folded in draw(st.lists(st.tuples(_NAMES, _TEXT, _TEXT), max_size=8)):
        field = name + b":" + value
        if folded:
            field += linesep + b" " + folded  # a folded continuation line
        headers.append(field)
    body = draw(st.lists(_BODY_LINE, max_size=5))
    trailing = draw(st.sampled_from([b"", linesep, linesep * 3]))
    message = linesep.join(headers) + linesep + linesep + linesep.join(body) + trailing
    if draw(st.booleans()):  # a bare newline in a CRLF message (dkimpy reads it as CRLF)
        message = message.replace(b"\r\n", b"\n", 1) if linesep == b"\r\n" else message
    return message


@settings(max_examples=300, deadline=None)
@given(message=_messages())
def test_the_shortcuts_give_dkimpys_signature_for_any_message(
    keys: dkim.DkimKeyPair, message: bytes
) -> None:
    """Header parsing and canonicalization shortcuts change nothing: for messages with
    folding, tabs, runs and trailing spaces, empty lines and mixed line ends, the
    signature is byte for byte the one dkimpy makes itself."""
    timestamp = 1_767_225_600
    with unittest.mock.patch.object(dkimpy.time, "time", lambda: timestamp):
        reference = dkimpy.sign(
            message, b"mailbridge", b"corp.io", keys.private_key_pem.encode(),
            canonicalize=dkim.CANONICALIZATION, linesep=b"\r\n" if b"\r\n" in message else b"\n",
        )  # fmt: skip
    ours = dkim.sign(message, "corp.io", "mailbridge", keys.private_key_pem, signed_at=timestamp)
    assert ours == reference + message


def test_the_library_path_is_dkimpys_sign(
    keys: dkim.DkimKeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delivery bench's library path: dkimpy's ``dkim.sign``, the same signature."""
    timestamp = 1_767_225_600
    monkeypatch.setattr(dkimpy.time, "time", lambda: timestamp)
    ours = dkim.sign(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem, signed_at=timestamp)
    assert dkim.sign_with_dkimpy(MESSAGE, "corp.io", "mailbridge", keys.private_key_pem) == ours
    bare = MESSAGE.replace(b"\r\n", b"\n")
    assert dkim.sign_with_dkimpy(bare, "corp.io", "mailbridge", keys.private_key_pem) == dkim.sign(
        bare, "corp.io", "mailbridge", keys.private_key_pem, signed_at=timestamp
    )
    with pytest.raises(dkim.DkimError):
        dkim.sign_with_dkimpy(MESSAGE, "corp.io", "mailbridge", "not a key")


@settings(max_examples=500, deadline=None)
@given(message=st.binary(max_size=12).map(lambda raw: bytes(b"a\r\n: "[b % 5] for b in raw)))
def test_the_end_of_the_headers_is_where_dkimpys_expression_finds_it(message: bytes) -> None:
    found = re.search(rb"\A\r?\n|\r?\n\r?\n", message)
    assert dkim._headers_end(message) == (None if found is None else found.span())


@settings(max_examples=1000, deadline=None)
@given(
    head=st.binary(max_size=16).map(lambda raw: bytes(b"b=; \r\n\t0h"[b % 9] for b in raw)),
    placeholder=st.booleans(),
)
def test_the_b_tag_is_emptied_as_dkimpys_expression_empties_it(
    head: bytes, placeholder: bool
) -> None:
    value = head + (b"0" * 60 if placeholder else b"")
    assert dkim._without_b(value) == dkimpy.RE_BTAG.sub(b"\\1", value)
