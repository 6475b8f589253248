"""The token scheme of signed links: itsdangerous's format, one spelling per payload, and
the tokens of the scheme before it still read (links in mail already sent)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest
from itsdangerous import Signer
from itsdangerous.encoding import base64_encode

from mailbridge.mail import signed_links, tracking
from mailbridge.redaction import REDACTED, mask_text
from mailbridge.services.polls import Voter, read_vote_token
from mailbridge.services.polls._links import Ballot, vote_token
from mailbridge.storage.types import new_id

SECRET = b"s" * 32
BASE = "https://mail.example.net"
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def legacy_token(secret: bytes, purpose: str, payload: bytes) -> str:
    """A token as mailbridge signed them before itsdangerous (what sent mail carries)."""
    mac = hmac.new(secret, purpose.encode() + b"\x00" + payload, hashlib.sha256).digest()[:16]

    def encode(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return f"{encode(payload)}.{encode(mac)}"


def test_a_token_is_an_itsdangerous_signer_token_salted_by_purpose() -> None:
    payload = signed_links.id_bytes(new_id())
    token = signed_links.sign(SECRET, tracking.OPEN, payload)
    signer = Signer(
        SECRET, salt="mailbridge.link.open", key_derivation="hmac", digest_method=hashlib.sha256
    )
    assert signer.unsign(token) == base64_encode(payload)
    assert set(token) <= set(ALPHABET + ".") and token.count(".") == 1
    assert signed_links.verify(SECRET, tracking.OPEN, token) == payload
    assert signed_links.verify(SECRET, tracking.CLICK, token) is None
    assert signed_links.verify(b"another secret", tracking.OPEN, token) is None


def test_only_the_exact_token_verifies() -> None:
    payload = signed_links.id_bytes(new_id())
    token = signed_links.sign(SECRET, tracking.OPEN, payload)
    encoded, signature = token.split(".")
    signer = Signer(
        SECRET, salt="mailbridge.link.open", key_derivation="hmac", digest_method=hashlib.sha256
    )
    # Spellings of the same signature that Signer.unsign accepts: the unused low bits of
    # the last character, padding, a character the ASCII encoding drops.
    respelled = signature[:-1] + ALPHABET[ALPHABET.index(signature[-1]) ^ 1]
    for other in (f"{encoded}.{respelled}", f"{encoded}.{signature}=", f"{encoded}.{signature}é"):
        assert signer.validate(other), other
        assert signed_links.verify(SECRET, tracking.OPEN, other) is None, other
    for garbage in ("", ".", "abc", "abc.def", "!!!.???", f"{encoded}.", f".{signature}", "é.é"):
        assert signed_links.verify(SECRET, tracking.OPEN, garbage) is None


def test_links_in_mail_sent_before_still_work() -> None:
    email_id, target = new_id(), "https://shop.example.org/p?id=3"
    key = signed_links.id_bytes(email_id)
    assert tracking.read_open_token(SECRET, legacy_token(SECRET, tracking.OPEN, key)) == email_id
    unsubscribe = legacy_token(SECRET, tracking.UNSUBSCRIBE, key)
    assert tracking.read_unsubscribe_token(SECRET, unsubscribe) == email_id
    click = legacy_token(SECRET, tracking.CLICK, key + target.encode())
    assert tracking.read_click_token(SECRET, click) == tracking.Click(email_id, target)

    poll_id, team_id, voter = new_id(), new_id(), Voter.of(None, "ann@corp.io")
    current = vote_token(SECRET, poll_id, team_id, 2, voter)
    payload = signed_links.verify(SECRET, "poll-vote", current)
    assert payload is not None
    old_vote = legacy_token(SECRET, "poll-vote", payload)
    assert read_vote_token(SECRET, old_vote) == Ballot(poll_id, team_id, 2, voter)

    now = datetime(2026, 11, 1, tzinfo=UTC)
    attachment_id = new_id()
    expiry = int((now + timedelta(hours=1)).timestamp()).to_bytes(8, "big")
    download = legacy_token(
        SECRET, signed_links.DOWNLOAD, signed_links.id_bytes(attachment_id) + expiry
    )
    assert signed_links.read_download_token(SECRET, download, now) == attachment_id
    assert signed_links.read_download_token(SECRET, download, now + timedelta(hours=1)) is None


def test_an_old_token_is_held_to_what_it_was() -> None:
    key = signed_links.id_bytes(new_id())
    token = legacy_token(SECRET, tracking.OPEN, key)
    encoded, mac = token.split(".")
    assert tracking.read_open_token(b"another secret", token) is None
    assert tracking.read_unsubscribe_token(SECRET, token) is None  # another purpose
    other = legacy_token(SECRET, tracking.OPEN, signed_links.id_bytes(new_id())).split(".")[0]
    assert tracking.read_open_token(SECRET, f"{other}.{mac}") is None
    respelled = mac[:-1] + ALPHABET[ALPHABET.index(mac[-1]) ^ 1]
    assert base64.urlsafe_b64decode(respelled + "==") == base64.urlsafe_b64decode(mac + "==")
    assert tracking.read_open_token(SECRET, f"{encoded}.{respelled}") is None
    assert tracking.read_open_token(SECRET, f"{encoded}.{mac}!") is None


@pytest.mark.parametrize(
    "url",
    [
        tracking.open_pixel_url(BASE, SECRET, new_id()),
        tracking.click_url(BASE, SECRET, new_id(), "https://shop.example.org/p?id=3&x=y"),
        tracking.unsubscribe_url(BASE, SECRET, new_id()),
        signed_links.download_url(BASE, SECRET, new_id(), datetime(2027, 1, 1, tzinfo=UTC)),
        signed_links.link(
            BASE,
            signed_links.VOTE_PATH,
            vote_token(SECRET, new_id(), new_id(), 0, Voter.of(None, "a@b.c")),
        ),
    ],
    ids=["open", "click", "unsubscribe", "download", "vote"],
)
def test_logs_mask_the_whole_token(url: str) -> None:
    path = url.removeprefix(BASE)
    token = path.rsplit("/", 1)[1]
    masked = mask_text(f"GET {path} HTTP/1.1")
    assert masked == f"GET {path.removesuffix(token)}{REDACTED} HTTP/1.1"
