"""Outgoing HTTP to addresses customers give us: attachment URLs and webhook endpoints.

- http and https only, with a host.
- No private targets: the host is resolved and *every* address it has must be a
  public one (not loopback, private, link-local, shared, multicast, reserved...),
  unless ``MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE`` is set. An IPv6 address that carries an
  IPv4 one (mapped, NAT64, 6to4...) is judged by the IPv4 address it leads to: see
  :func:`embedded_ipv4`.
- The request then goes to the address that was checked (Host header and TLS SNI keep
  the name), so a DNS answer that changes between the check and the connection cannot
  point it elsewhere.

A refusal says whether trying again later can help (``temporary``: a name that does
not resolve now may resolve later; a private address will not become public).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx

from mailbridge.errors import MailbridgeError


class TargetRefused(MailbridgeError):
    """The URL is not one we send to; ``temporary`` says whether a retry may help."""

    def __init__(self, message: str, *, temporary: bool) -> None:
        super().__init__(message)
        self.temporary = temporary


@dataclass(frozen=True)
class PinnedTarget:
    """Where to connect (the checked address) and what to tell the server (the name)."""

    url: httpx.URL
    headers: dict[str, str]
    extensions: dict[str, str] = field(default_factory=dict)


# IPv6 prefixes whose addresses stand for an IPv4 one that a host or a translator on
# the way connects to; the IPv4 address is the last 32 bits (6to4 and Teredo have
# properties of their own in ``ipaddress``).
_V4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")  # RFC 4291
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052, the well-known prefix
_LAST_32_BITS = (
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible (RFC 4291, deprecated)
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (RFC 2765, SIIT)
    _V4_MAPPED,
    _NAT64,
    ipaddress.IPv6Network("64:ff9b:1::/48"),  # RFC 8215, local-use NAT64
)
# Forms whose target is the IPv4 host they name: public when that address is.
_TRANSLATED = (_V4_MAPPED, _NAT64, ipaddress.IPv6Network("2002::/16"))  # 6to4
# Where no public target ever is, whatever Python's ``is_global`` says (it varies between
# 3.11 releases): the deprecated and local-use embeddings, Teredo (reached through a
# relay; IANA: not globally reachable), documentation prefixes, 6to4's relay anycast.
_NEVER_V6 = (
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("2001::/32"),  # Teredo
    ipaddress.IPv6Network("2001:db8::/32"),
    ipaddress.IPv6Network("3fff::/20"),  # RFC 9637
)
_NEVER_V4 = ipaddress.IPv4Network("192.88.99.0/24")  # RFC 7526


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address ``address`` carries: ``::a.b.c.d``, ``::ffff:a.b.c.d``,
    ``::ffff:0:a.b.c.d``, NAT64 (``64:ff9b::/96``, ``64:ff9b:1::/48``), 6to4 (bits 16-48
    of ``2002::/16``) and Teredo (server in bits 32-64, client in the last 32 bits
    inverted). A connection to such an address may end at that IPv4 host."""
    found: list[ipaddress.IPv4Address] = []
    if any(address in network for network in _LAST_32_BITS):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def _is_public_v4(address: ipaddress.IPv4Address) -> bool:
    return address.is_global and not address.is_multicast and address not in _NEVER_V4


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` is one we may connect to: global unicast, and every IPv4
    address it embeds is too (``::ffff:127.0.0.1`` reaches loopback)."""
    if isinstance(address, ipaddress.IPv4Address):
        return _is_public_v4(address)
    embedded = embedded_ipv4(address)
    if not all(_is_public_v4(inner) for inner in embedded):
        return False
    if any(address in network for network in _NEVER_V6):
        return False
    if embedded and any(address in network for network in _TRANSLATED):
        return True  # the IPv4 host decides; Python calls some of these non-global
    return address.is_global and not (
        address.is_multicast or address.is_reserved or address.is_site_local
    )


def parse_url(url: str, what: str = "URL") -> httpx.URL:
    """``url`` parsed; refused (for good) unless it is http(s) with a host."""
    try:
        parsed = httpx.URL(url)
        host = parsed.host  # decoded from IDNA here: ``xn--a`` is refused only now
    except (httpx.InvalidURL, TypeError, UnicodeError) as exc:  # UnicodeError: IDNA refused
        raise TargetRefused(f"invalid {what} {url!r}", temporary=False) from exc
    if parsed.scheme not in ("http", "https") or not host:
        raise TargetRefused(f"{what}s must be http or https, not {url!r}", temporary=False)
    return parsed


async def _getaddrinfo(host: str, port: int) -> list[Any]:
    """``getaddrinfo`` on a daemon thread of its own. ``loop.getaddrinfo`` uses the default
    executor, which the interpreter joins at exit: a lookup waiting on a slow resolver
    then held up a stopping process for minutes. A cancelled lookup here is left to
    finish (or not) on its own; nothing waits for it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[list[Any]] = loop.create_future()

    def deliver(result: list[Any] | None, error: BaseException | None) -> None:
        if future.done():  # cancelled: nobody waits any more
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result or [])

    def lookup() -> None:
        result: list[Any] | None = None
        error: BaseException | None = None
        try:
            result = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except Exception as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(deliver, result, error)

    threading.Thread(target=lookup, name=f"dns:{host}", daemon=True).start()
    return await future


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (``host`` itself when it is an address)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = await _getaddrinfo(host, port)
    except socket.gaierror as exc:
        raise TargetRefused(f"cannot resolve {host}: {exc}", temporary=True) from exc
    except UnicodeError as exc:  # an empty or over-long label: no lookup can ever succeed
        raise TargetRefused(f"{host!r} is not a host name: {exc}", temporary=False) from exc
    addresses = [str(info[4][0]) for info in infos]
    return list(dict.fromkeys(addresses))


def check_addresses(url: httpx.URL, addresses: list[str], *, allow_private: bool) -> None:
    """Refuse ``url`` when one of the addresses its host resolved to is not public."""
    if allow_private:
        return
    for address in addresses:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
        if not is_public(parsed):
            inner = embedded_ipv4(parsed) if isinstance(parsed, ipaddress.IPv6Address) else []
            carried = f" (carrying {', '.join(map(str, inner))})" if inner else ""
            raise TargetRefused(
                f"refused {url}: {url.host} resolves to the non-public address {address}{carried}",
                temporary=False,
            )


async def pin(url: str, *, allow_private: bool, what: str = "URL") -> PinnedTarget:
    """Check ``url`` and say where to connect; raises :class:`TargetRefused`."""
    parsed = parse_url(url, what)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = await resolve(parsed.host, port)
    if not addresses:
        raise TargetRefused(f"{parsed.host} has no address", temporary=True)
    check_addresses(parsed, addresses, allow_private=allow_private)
    host_header = parsed.host if parsed.port is None else f"{parsed.host}:{parsed.port}"
    extensions = {"sni_hostname": parsed.host} if parsed.scheme == "https" else {}
    return PinnedTarget(parsed.copy_with(host=addresses[0]), {"Host": host_header}, extensions)
