"""The DNS records a sending domain publishes, how each one is checked, and the status rule.

Records (Resend's shapes; ``name`` is relative to the domain, ``ttl`` is "Auto"):

    record    name                      type   value
    DKIM      mailbridge._domainkey     TXT    v=DKIM1; k=rsa; p=<base64 DER public key>
    SPF       <return path>             MX     <service host>, priority 10
    SPF       <return path>             TXT    v=spf1 include:<service host> ~all
    Tracking  <tracking subdomain>      CNAME  <service host>   (open or click tracking on)

The *service host* is the host of ``MAILBRIDGE_PUBLIC_URL``. The operator publishes
at that host the SPF record that names the addresses mail really leaves from; the
``include:`` lets them change relays without every customer editing DNS. (An IP
literal host, as in local development, becomes ``ip4:``/``ip6:``.)

Each record is ``verified`` or ``failed`` after a check, ``pending`` when the
lookup could not conclude (timeout, server failure), ``not_started`` before any
check. The domain's status follows from them (:func:`domain_status`).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import dns.asyncresolver
import dns.exception
import dns.resolver

from mailbridge.config import Settings
from mailbridge.errors import ConfigurationError
from mailbridge.mail import dkim
from mailbridge.storage.tables import Domain

DKIM_SELECTOR = "mailbridge"
RECORD_TTL = "Auto"
MX_PRIORITY = 10
LOOKUP_SECONDS = 5.0
DNS_PORT = 53


class RecordKey(StrEnum):
    """Keys of ``Domain.record_status``."""

    DKIM = "dkim"
    SPF = "spf"
    RETURN_PATH_MX = "return_path_mx"
    TRACKING = "tracking"
    RECEIVING_MX = "receiving_mx"


class RecordStatus(StrEnum):
    NOT_STARTED = "not_started"
    PENDING = "pending"
    VERIFIED = "verified"
    FAILED = "failed"


class DomainStatus(StrEnum):
    NOT_STARTED = "not_started"
    PENDING = "pending"
    VERIFIED = "verified"
    PARTIALLY_VERIFIED = "partially_verified"
    PARTIALLY_FAILED = "partially_failed"
    FAILED = "failed"


# Spec §3.4: a domain may send in these statuses (and holds its name against other teams).
SENDING_STATUSES = frozenset(
    {DomainStatus.VERIFIED, DomainStatus.PARTIALLY_VERIFIED, DomainStatus.PARTIALLY_FAILED}
)
# The records receivers authenticate mail with; the others only help (bounces, tracking).
AUTHENTICATING = (RecordKey.DKIM, RecordKey.SPF)


@dataclass(frozen=True)
class ExpectedRecord:
    key: RecordKey
    label: str  # Resend's `record`
    name: str  # relative to the domain
    type: str
    value: str
    priority: int | None = None

    def fqdn(self, domain: str) -> str:
        return domain if self.name == "@" else f"{self.name}.{domain}"

    def view(self, status: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "record": self.label,
            "name": self.name,
            "type": self.type,
            "ttl": RECORD_TTL,
            "status": status,
            "value": self.value,
        }
        if self.priority is not None:
            body["priority"] = self.priority
        return body


def service_host(settings: Settings) -> str:
    return (urlsplit(settings.public_url).hostname or "localhost").lower()


def spf_mechanism(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"include:{host}"
    return f"ip{address.version}:{address}"


def tracking_enabled(domain: Domain) -> bool:
    return bool(domain.open_tracking or domain.click_tracking)


def record_keys(domain: Domain) -> list[RecordKey]:
    keys = [RecordKey.DKIM, RecordKey.RETURN_PATH_MX, RecordKey.SPF]
    if tracking_enabled(domain):
        keys.append(RecordKey.TRACKING)
    if domain.receiving:
        keys.append(RecordKey.RECEIVING_MX)
    return keys


def expected_records(domain: Domain, settings: Settings) -> list[ExpectedRecord]:
    host = service_host(settings)
    records = [
        ExpectedRecord(
            RecordKey.DKIM,
            "DKIM",
            f"{domain.dkim_selector}._domainkey",
            "TXT",
            dkim.txt_value(domain.dkim_public_key),
        ),
        ExpectedRecord(
            RecordKey.RETURN_PATH_MX, "SPF", domain.return_path, "MX", host, MX_PRIORITY
        ),
        ExpectedRecord(
            RecordKey.SPF, "SPF", domain.return_path, "TXT", f"v=spf1 {spf_mechanism(host)} ~all"
        ),
    ]
    if tracking_enabled(domain):
        records.append(
            ExpectedRecord(RecordKey.TRACKING, "Tracking", domain.tracking_subdomain, "CNAME", host)
        )
    if domain.receiving:
        # Mail to the domain itself comes to mailbridge's listener.
        records.append(
            ExpectedRecord(RecordKey.RECEIVING_MX, "Receiving", "@", "MX", host, MX_PRIORITY)
        )
    return records


def record_statuses(domain: Domain) -> dict[str, str]:
    """The status of every record in play; a record not checked yet is ``not_started``."""
    stored = domain.record_status or {}
    return {
        key.value: str(stored.get(key.value, RecordStatus.NOT_STARTED))
        for key in record_keys(domain)
    }


def domain_status(statuses: Mapping[str, str]) -> DomainStatus:
    """The rule, first match wins:

    - every record not_started → not_started (never checked);
    - every record verified → verified;
    - DKIM and SPF verified (the return-path MX or tracking CNAME not) → partially_verified;
    - DKIM or SPF verified, not both → partially_failed;
    - neither verified but a lookup could not conclude → pending;
    - otherwise → failed.
    """
    values = list(statuses.values())
    if all(value == RecordStatus.NOT_STARTED for value in values):
        return DomainStatus.NOT_STARTED
    if all(value == RecordStatus.VERIFIED for value in values):
        return DomainStatus.VERIFIED
    authenticating = [statuses.get(key.value) == RecordStatus.VERIFIED for key in AUTHENTICATING]
    if all(authenticating):
        return DomainStatus.PARTIALLY_VERIFIED
    if any(authenticating):
        return DomainStatus.PARTIALLY_FAILED
    if RecordStatus.PENDING in values:
        return DomainStatus.PENDING
    return DomainStatus.FAILED


def merge_check(previous: Mapping[str, str], checked: Mapping[str, str]) -> dict[str, str]:
    """New record statuses; an inconclusive lookup never demotes a verified record."""
    merged = dict(previous)
    for key, status in checked.items():
        if status == RecordStatus.PENDING and previous.get(key) == RecordStatus.VERIFIED:
            continue
        merged[key] = status
    return merged


# --- DNS ---------------------------------------------------------------------------


def parse_nameserver(value: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port``, or a bare address (port 53)."""
    text = value.strip()
    host, port = text, DNS_PORT
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":"):
            port = _port(rest[1:], value)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        port = _port(port_text, value)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ConfigurationError(
            f"MAILBRIDGE_DNS_NAMESERVER must be an IP address with an optional port: {value!r}"
        ) from None
    return host, port


def _port(text: str, value: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise ConfigurationError(f"bad port in MAILBRIDGE_DNS_NAMESERVER: {value!r}")
    return int(text)


def build_resolver(
    settings: Settings, cache: dns.resolver.LRUCache | None = None
) -> dns.asyncresolver.Resolver:
    """A resolver for ``settings.dns_nameserver``, or the system's when unset; with a
    ``cache``, answers are kept for their TTL (dnspython's cache)."""
    if settings.dns_nameserver:
        host, port = parse_nameserver(settings.dns_nameserver)
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.nameservers = [host]
        resolver.port = port
    else:
        resolver = dns.asyncresolver.Resolver()
    resolver.lifetime = LOOKUP_SECONDS
    resolver.cache = cache
    return resolver


async def lookup(resolver: dns.asyncresolver.Resolver, fqdn: str, rdtype: str) -> list[Any] | None:
    """The answer's records ([] when the name or type does not exist), None when inconclusive."""
    try:
        answer = await resolver.resolve(fqdn.rstrip(".") + ".", rdtype, search=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer, dns.resolver.YXDOMAIN):
        return []
    except dns.exception.DNSException:
        return None
    return list(answer)


def txt_strings(rdatas: Sequence[Any]) -> list[str]:
    """TXT records, each with its character-strings joined (long values come split)."""
    return [b"".join(rdata.strings).decode("utf-8", "replace") for rdata in rdatas]


def _target(rdata: Any, attribute: str) -> str:
    return str(getattr(rdata, attribute).to_text(omit_final_dot=True)).lower()


def matches(record: ExpectedRecord, rdatas: Sequence[Any]) -> bool:
    if record.key is RecordKey.DKIM:
        expected = dkim.published_key(record.value)
        return any(dkim.published_key(txt) == expected for txt in txt_strings(rdatas))
    if record.key is RecordKey.SPF:
        # RFC 7208 §4.5: more than one SPF record is a permanent error.
        spf = [t for t in txt_strings(rdatas) if t.lower().split(" ", 1)[0] == "v=spf1"]
        mechanism = record.value.split()[1].lower()
        return len(spf) == 1 and mechanism in {t.lstrip("+") for t in spf[0].lower().split()}
    if record.key in (RecordKey.RETURN_PATH_MX, RecordKey.RECEIVING_MX):
        return any(_target(rdata, "exchange") == record.value for rdata in rdatas)
    return any(_target(rdata, "target") == record.value for rdata in rdatas)


async def check_record(
    resolver: dns.asyncresolver.Resolver, domain: str, record: ExpectedRecord
) -> RecordStatus:
    rdatas = await lookup(resolver, record.fqdn(domain), record.type)
    if rdatas is None:
        return RecordStatus.PENDING
    return RecordStatus.VERIFIED if matches(record, rdatas) else RecordStatus.FAILED


async def check_records(
    settings: Settings, domain: str, records: Sequence[ExpectedRecord]
) -> dict[str, str]:
    """Look every record up at once; a resolver that cannot be built leaves all pending."""
    try:
        resolver = build_resolver(settings)
    except dns.resolver.NoResolverConfiguration:
        return {record.key.value: RecordStatus.PENDING for record in records}
    results = await asyncio.gather(*(check_record(resolver, domain, r) for r in records))
    return {record.key.value: status.value for record, status in zip(records, results, strict=True)}


_CACHED_RESOLVERS: dict[tuple[int, str | None], dns.asyncresolver.Resolver] = {}


def _resolver_of(cache: dns.resolver.LRUCache, settings: Settings) -> dns.asyncresolver.Resolver:
    """The resolver kept with ``cache`` (a listener's: one a process), built once: building
    one for each lookup cost more than the cached answer it gives."""
    key = (id(cache), settings.dns_nameserver)
    resolver = _CACHED_RESOLVERS.get(key)
    if resolver is None or resolver.cache is not cache:
        if len(_CACHED_RESOLVERS) >= 64:  # listeners come and go (tests): forget the old
            _CACHED_RESOLVERS.clear()
        resolver = _CACHED_RESOLVERS[key] = build_resolver(settings, cache)
    return resolver


async def txt_values(
    settings: Settings, fqdn: str, cache: dns.resolver.LRUCache | None = None
) -> list[str] | None:
    """The TXT values at ``fqdn``; None when the lookup could not conclude. With a
    ``cache``: what it holds still within its TTL, else looked up and kept there."""
    try:
        resolver = _resolver_of(cache, settings) if cache is not None else build_resolver(settings)
    except dns.resolver.NoResolverConfiguration:
        return None
    rdatas = await lookup(resolver, fqdn, "TXT")
    return None if rdatas is None else txt_strings(rdatas)
