"""SPF, DKIM and DMARC results of a received message (recorded, not enforced).

- DKIM (dkimpy): ``none`` without a signature; else the first signature verified
  against its key, looked up through ``MAILBRIDGE_DNS_NAMESERVER`` (or the system's
  resolver): ``pass``, ``fail``, or ``temperror`` when the key could not be fetched.
- SPF (pyspf, RFC 7208): the connecting address against the envelope sender's domain
  (the HELO name when the sender is null); ``none`` for loopback and private peers,
  where SPF says nothing. pyspf resolves with the system's resolver.
- DNS answers come from the listener's cache while their TTL lasts (dnspython's).
- DMARC (RFC 7489, relaxed alignment): ``none`` without a ``_dmarc`` record for the
  From domain; ``pass`` when SPF or DKIM passed for a domain aligned with it;
  else ``fail``; ``temperror`` when the record could not be fetched.

All of it within ``BUDGET`` seconds: what is not known by then is ``temperror``, so a
slow DNS server never holds the 250 past it. Off with
``MAILBRIDGE_INBOUND_AUTHENTICATION=false`` (all ``null``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from dataclasses import dataclass
from email.message import Message
from email.utils import parseaddr

import dkim
import spf
from dns.resolver import LRUCache

from mailbridge.config import Settings
from mailbridge.services import domains

BUDGET = 4.0  # seconds for all lookups of one message
_TAG = re.compile(r"\b([a-z]+)\s*=\s*([^;]*)")


@dataclass(frozen=True)
class AuthResults:
    spf: str | None = None
    dkim: str | None = None
    dmarc: str | None = None
    dkim_domain: str | None = None


def _domain_of(address: str | None) -> str | None:
    _name, bare = parseaddr(address or "")
    return bare.rpartition("@")[2].lower() or None


def _aligned(domain: str | None, from_domain: str) -> bool:
    if not domain:
        return False
    return (
        domain == from_domain
        or domain.endswith("." + from_domain)
        or (from_domain.endswith("." + domain))
    )


def _is_public(address: str | None) -> bool:
    try:
        return address is not None and ipaddress.ip_address(address).is_global
    except ValueError:
        return False


async def _dkim(
    settings: Settings, raw: bytes, message: Message, cache: LRUCache | None
) -> tuple[str, str | None]:
    signature = message.get("DKIM-Signature")
    if signature is None:
        return "none", None
    tags = dict(_TAG.findall(str(signature).replace("\r\n", "").replace("\n", "")))
    domain, selector = tags.get("d", "").strip().lower(), tags.get("s", "").strip()
    if not domain or not selector:
        return "fail", domain or None
    published = await domains.txt_values(settings, f"{selector}._domainkey.{domain}", cache)
    if published is None:
        return "temperror", domain
    if not published:
        return "fail", domain
    key = published[0].encode()

    def verify() -> bool:
        return bool(dkim.verify(raw, dnsfunc=lambda _name, timeout=5: key))

    try:
        passed = await asyncio.to_thread(verify)
    except Exception:  # a malformed signature is a failed one
        passed = False
    return ("pass" if passed else "fail"), domain


async def _spf(peer: str | None, mail_from: str, helo: str | None) -> str:
    if not _is_public(peer):
        return "none"
    result, _explanation = await asyncio.to_thread(
        spf.check2, i=peer, s=mail_from or f"postmaster@{helo or ''}", h=helo or "", timeout=3,
        querytime=3,
    )  # fmt: skip
    return str(result)


async def _dmarc(
    settings: Settings, from_domain: str | None, spf_result: str, mail_from: str,
    dkim_result: str, dkim_domain: str | None, cache: LRUCache | None,
) -> str:  # fmt: skip
    if not from_domain:
        return "none"
    records = await domains.txt_values(settings, f"_dmarc.{from_domain}", cache)
    if records is None:
        return "temperror"
    if not any(record.lower().startswith("v=dmarc1") for record in records):
        return "none"
    if dkim_result == "pass" and _aligned(dkim_domain, from_domain):
        return "pass"
    if spf_result == "pass" and _aligned(_domain_of(mail_from), from_domain):
        return "pass"
    return "fail"


async def authenticate(
    settings: Settings, raw: bytes, message: Message | None, mail_from: str,
    peer: str | None, helo: str | None, cache: LRUCache | None = None,
) -> AuthResults:  # fmt: skip
    """``cache``: DNS answers kept for their TTL across messages (a listener's own)."""
    if not settings.inbound_authentication or message is None:
        return AuthResults()
    results: dict[str, str | None] = {"spf": "temperror", "dkim": "temperror",
                                      "dmarc": "temperror", "dkim_domain": None}  # fmt: skip
    try:
        async with asyncio.timeout(BUDGET):
            results["dkim"], results["dkim_domain"] = await _dkim(settings, raw, message, cache)
            results["spf"] = await _spf(peer, mail_from, helo)
            results["dmarc"] = await _dmarc(
                settings, _domain_of(str(message.get("From", ""))), str(results["spf"]),
                mail_from, str(results["dkim"]), results["dkim_domain"], cache,
            )  # fmt: skip
    except TimeoutError:
        pass
    return AuthResults(**results)
