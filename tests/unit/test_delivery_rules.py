"""Delivery rules that need no I/O: the retry schedule, the relay URL, the simulator,
which attachment targets are public, how a fetch failure is classified, and the DATA
content a message becomes."""

from __future__ import annotations

import ipaddress
from datetime import timedelta

import httpx
import pytest
from aiosmtplib.protocol import PERIOD_REGEX, normalize_message_line_endings
from hypothesis import given
from hypothesis import strategies as st

from mailbridge.errors import ConfigurationError
from mailbridge.mail.attachments import (
    AttachmentFetchError,
    FetchPolicy,
    fetch_attachment,
    is_public,
)
from mailbridge.mail.providers import SmtpRelay
from mailbridge.mail.providers.simulator import SimulatedRecipient, split_recipients
from mailbridge.mail.providers.smtp import data_content
from mailbridge.mail.providers.smtp_relay import ehlo_name
from mailbridge.services.delivery._queue import EMAIL_RETRY_POLICY, RetryPolicy

# --- DATA content ---------------------------------------------------------------------


@given(
    st.lists(st.sampled_from([b"a", b".", b"..", b"\r", b"\n", b"\r\n", b" ", b"x.y"]), max_size=30)
)
def test_data_content_is_aiosmtplibs_transformation(pieces: list[bytes]) -> None:
    """Line ends made CRLF (lone CR or LF, a missing last one) and leading dots doubled,
    exactly as aiosmtplib's own regular expressions would, for any mix of them."""
    message = b"".join(pieces)
    expected = PERIOD_REGEX.sub(b"..", normalize_message_line_endings(message))
    assert data_content(message) == expected


def test_a_clean_message_is_sent_as_it_is() -> None:
    message = b"Subject: hi\r\n\r\nbody\r\n"
    assert data_content(message) is message
    assert data_content(b"Subject: hi\r\n\r\nbody") == message
    assert data_content(b"Subject: hi\r\n\r\n.body\r\n") == b"Subject: hi\r\n\r\n..body\r\n"


# --- the retry schedule ---------------------------------------------------------------


def test_the_retry_schedule() -> None:
    minutes = [EMAIL_RETRY_POLICY.delay_after(n) for n in range(1, 9)]
    assert minutes == [
        timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
        timedelta(hours=6), timedelta(hours=6), timedelta(hours=9), None,
    ]  # fmt: skip
    # About a day of trying before giving up.
    assert timedelta(hours=23) < EMAIL_RETRY_POLICY.total <= timedelta(hours=24)


def test_a_policy_is_data() -> None:
    policy = RetryPolicy((timedelta(seconds=5), timedelta(seconds=10)))
    assert [policy.delay_after(n) for n in (0, 1, 2, 3)] == [
        None, timedelta(seconds=5), timedelta(seconds=10), None,
    ]  # fmt: skip


# --- the relay URL ----------------------------------------------------------------------


def test_relay_urls() -> None:
    relay = SmtpRelay.from_url("smtp://user%40corp:p%3Ass@relay.corp.io:2525?starttls=true")
    assert relay == SmtpRelay(
        host="relay.corp.io", port=2525, username="user@corp", password="p:ss",
        implicit_tls=False, starttls=True, verify_certificates=True, timeout=30.0,
    )  # fmt: skip
    assert SmtpRelay.from_url("smtp://relay.io").port == 25
    assert SmtpRelay.from_url("smtp://relay.io").starttls is None  # when offered
    assert SmtpRelay.from_url("smtp://relay.io?starttls=true").port == 587
    assert SmtpRelay.from_url("smtp://relay.io?starttls=false").starttls is False
    implicit = SmtpRelay.from_url("smtps://relay.io?verify=false&timeout=5")
    assert (implicit.port, implicit.implicit_tls, implicit.starttls) == (465, True, False)
    assert (implicit.verify_certificates, implicit.timeout) == (False, 5.0)
    assert SmtpRelay.from_url("smtp://relay.io").username is None
    assert SmtpRelay.from_url("smtp://relay.io").pipelining  # when offered
    assert not SmtpRelay.from_url("smtp://relay.io?pipelining=false").pipelining


@pytest.mark.parametrize(
    "url",
    [
        "http://relay.io",
        "smtp://",
        "smtp://relay.io?starttls=maybe",
        "smtp://relay.io?pipelining=sometimes",
        "smtps://relay.io?starttls=true",
        "smtp://relay.io:notaport",
    ],
)
def test_bad_relay_urls(url: str) -> None:
    with pytest.raises(ConfigurationError):
        SmtpRelay.from_url(url)


def test_ehlo_names() -> None:
    assert ehlo_name("mail.corp.io") == "mail.corp.io"
    assert ehlo_name("127.0.0.1") == "[127.0.0.1]"
    assert ehlo_name("::1") == "[IPv6:::1]"


# --- the simulator -----------------------------------------------------------------------


def test_simulated_recipients_are_split_off() -> None:
    real, simulated = split_recipients(
        ["ann@corp.io", "Bounced+x@sim.dev", "complained@sim.dev", "delivered@other.dev",
         "nobody@sim.dev"],
        "sim.dev",
    )  # fmt: skip
    assert real == ["ann@corp.io", "delivered@other.dev", "nobody@sim.dev"]
    assert simulated == [
        SimulatedRecipient("bounced+x@sim.dev", "bounced"),
        SimulatedRecipient("complained@sim.dev", "complained"),
    ]
    assert simulated[1].events == ("delivered", "complained")


# --- attachment targets -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # shared address space
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
    ],
)
def test_public_addresses(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


async def fetch(handler: httpx.MockTransport, url: str, **policy: object) -> bytes:
    async with httpx.AsyncClient(transport=handler) as client:
        return await fetch_attachment(client, url, policy=FetchPolicy(**policy), limit=1000)  # type: ignore[arg-type]


def serve(routes: dict[str, httpx.Response]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.host == "93.184.216.34"  # the address that was checked
        return routes.get(request.url.path, httpx.Response(404))

    return httpx.MockTransport(handle)


async def test_a_public_file_is_fetched() -> None:
    transport = serve({"/a.pdf": httpx.Response(200, content=b"%PDF")})
    assert await fetch(transport, "http://93.184.216.34/a.pdf") == b"%PDF"


@pytest.mark.parametrize(
    ("url", "routes", "temporary", "message"),
    [
        ("ftp://93.184.216.34/a", {}, False, "must be http or https"),
        ("http://93.184.216.34/missing", {}, False, "answered 404"),
        ("http://93.184.216.34/busy", {"/busy": httpx.Response(503)}, True, "answered 503"),
        ("http://93.184.216.34/slow", {"/slow": httpx.Response(429)}, True, "answered 429"),
        ("http://93.184.216.34/big", {"/big": httpx.Response(200, content=b"x" * 1001)},
         False, "larger than"),
        ("http://93.184.216.34/r", {"/r": httpx.Response(302, headers={"Location": "http://10.0.0.1/x"})},
         False, "non-public address 10.0.0.1"),
        ("http://93.184.216.34/loop", {"/loop": httpx.Response(302, headers={"Location": "/loop"})},
         False, "more than 3 redirects"),
        ("http://127.0.0.1/x", {}, False, "non-public address 127.0.0.1"),
    ],
)  # fmt: skip
async def test_fetch_failures_say_whether_to_retry(
    url: str, routes: dict[str, httpx.Response], temporary: bool, message: str
) -> None:
    with pytest.raises(AttachmentFetchError) as caught:
        await fetch(serve(routes), url)
    assert caught.value.temporary is temporary
    assert message in str(caught.value)
