"""The SSRF filter (``mail.targets``) judges an IPv6 address by every IPv4 address it
carries: each spelling of loopback, a private network or the metadata address is
refused. (That the request then goes to the address checked, never to a second
lookup's, is tested with the fetchers: test_delivery_rules, test_http_post.)"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from mailbridge.mail import targets
from mailbridge.mail.targets import TargetRefused, embedded_ipv4, is_public, pin

PUBLIC_V4 = "93.184.216.34"  # 5db8:d822


def v6(text: str) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(text)


@pytest.mark.parametrize(
    ("address", "carried"),
    [
        ("::127.0.0.1", ["127.0.0.1"]),  # IPv4-compatible
        ("::ffff:127.0.0.1", ["127.0.0.1"]),  # IPv4-mapped
        ("::ffff:0:127.0.0.1", ["127.0.0.1"]),  # IPv4-translated (SIIT)
        ("64:ff9b::7f00:1", ["127.0.0.1"]),  # NAT64, well-known prefix
        ("64:ff9b:1::a9fe:a9fe", ["169.254.169.254"]),  # NAT64, local-use prefix
        ("2002:c0a8:101::1", ["192.168.1.1"]),  # 6to4: bits 16-48
        # Teredo: the server in bits 32-64, the client's address inverted in the last 32.
        ("2001:0:5db8:d822::80ff:fffe", [PUBLIC_V4, "127.0.0.1"]),
        ("2606:2800:220:1:248:1893:25c8:1946", []),
        ("::1", ["0.0.0.1"]),
    ],
)
def test_the_ipv4_address_each_form_carries(address: str, carried: list[str]) -> None:
    assert [str(inner) for inner in embedded_ipv4(v6(address))] == carried


@pytest.mark.parametrize(
    "address",
    [
        "::127.0.0.1",
        "::10.0.0.1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:0:127.0.0.1",
        "64:ff9b::127.0.0.1",
        "64:ff9b::10.1.2.3",
        "64:ff9b::169.254.169.254",
        "64:ff9b::100.64.0.1",  # shared address space
        "64:ff9b:1::127.0.0.1",
        "64:ff9b:1:ffff::7f00:1",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "2001:0:5db8:d822::80ff:fffe",  # Teredo, client 127.0.0.1
        "2001:0:7f00:1::",  # Teredo, server 127.0.0.1
    ],
)
def test_every_embedding_of_a_private_ipv4_address_is_refused(address: str) -> None:
    assert not is_public(v6(address))


@pytest.mark.parametrize(
    ("address", "public"),
    [
        # A translator or a 6to4 relay takes these to the public IPv4 host they name.
        (f"::ffff:{PUBLIC_V4}", True),
        (f"64:ff9b::{PUBLIC_V4}", True),
        ("2002:5db8:d822::1", True),
        # Deprecated or local-use embeddings, and Teredo (through a relay): never a target.
        (f"::{PUBLIC_V4}", False),
        (f"::ffff:0:{PUBLIC_V4}", False),
        (f"64:ff9b:1::{PUBLIC_V4}", False),
        ("2001:0:5db8:d822::a247:2bdd", False),
        # Around the NAT64 prefix: reserved space, not a translation.
        ("64:ff9b:0:1::5db8:d822", False),
        # Native IPv6: global unicast only.
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("fec0::1", False),  # site-local
        ("3fff::1", False),  # documentation (RFC 9637)
        ("2001:db8::1", False),
        ("ff0e::1", False),
        ("::", False),
    ],
)
def test_a_public_embedded_address_passes_where_a_real_target_can_be(
    address: str, public: bool
) -> None:
    assert is_public(v6(address)) is public


@pytest.mark.parametrize(
    ("address", "public"),
    [(PUBLIC_V4, True), ("192.88.99.1", False), ("127.0.0.1", False), ("224.0.0.1", False)],
)
def test_ipv4_addresses(address: str, public: bool) -> None:
    assert is_public(ipaddress.IPv4Address(address)) is public


@pytest.mark.parametrize(
    "url",
    [
        "http://[::127.0.0.1]/hook",
        "http://[64:ff9b::7f00:1]:8080/hook",
        "https://[2002:7f00:1::1]/hook",
        "http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data",
    ],
)
async def test_urls_naming_an_embedding_address_are_refused(url: str) -> None:
    with pytest.raises(
        TargetRefused, match=r"carrying (127\.0\.0\.1|169\.254\.169\.254)"
    ) as refused:
        await pin(url, allow_private=False)
    assert refused.value.temporary is False


async def test_a_name_with_one_embedding_address_among_public_ones_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def lookup(host: str, port: int) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_V4, port)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("64:ff9b::a00:1", port, 0, 0)),
        ]

    monkeypatch.setattr(targets, "_getaddrinfo", lookup)
    with pytest.raises(TargetRefused, match=r"64:ff9b::a00:1 \(carrying 10\.0\.0\.1\)"):
        await pin("https://hooks.example.org/in", allow_private=False)
    allowed = await pin("https://hooks.example.org/in", allow_private=True)
    assert allowed.url.host == PUBLIC_V4
