"""The domain status rule, record matching and name rules (no I/O)."""

from __future__ import annotations

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import pytest

from mailbridge.config import Settings
from mailbridge.errors import ConfigurationError, ValidationError
from mailbridge.services.domains._domains import is_at_or_under, normalize_name
from mailbridge.services.domains._records import (
    ExpectedRecord,
    RecordKey,
    domain_status,
    matches,
    merge_check,
    parse_nameserver,
    service_host,
    spf_mechanism,
)

V, F, P, N = "verified", "failed", "pending", "not_started"


@pytest.mark.parametrize(
    ("dkim", "spf", "mx", "tracking", "expected"),
    [
        (N, N, N, None, "not_started"),
        (V, V, V, None, "verified"),
        (V, V, V, V, "verified"),
        (V, V, F, None, "partially_verified"),
        (V, V, V, F, "partially_verified"),
        (V, V, V, N, "partially_verified"),
        (V, F, V, None, "partially_failed"),
        (F, V, F, None, "partially_failed"),
        (V, P, F, None, "partially_failed"),
        (F, F, V, V, "failed"),
        (F, F, F, None, "failed"),
        (P, F, F, None, "pending"),
        (P, P, P, None, "pending"),
    ],
)
def test_domain_status_rule(
    dkim: str, spf: str, mx: str, tracking: str | None, expected: str
) -> None:
    statuses = {"dkim": dkim, "spf": spf, "return_path_mx": mx}
    if tracking is not None:
        statuses["tracking"] = tracking
    assert domain_status(statuses) == expected


def test_an_inconclusive_lookup_never_demotes_a_verified_record() -> None:
    previous = {"dkim": V, "spf": V, "return_path_mx": F}
    merged = merge_check(previous, {"dkim": P, "spf": F, "return_path_mx": P})
    assert merged == {"dkim": V, "spf": F, "return_path_mx": P}


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("Corp.IO", "corp.io"),
        (" mail.corp.io. ", "mail.corp.io"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("a-b.c0.dev", "a-b.c0.dev"),
    ],
)
def test_names_are_normalized(raw: str, name: str) -> None:
    assert normalize_name(raw) == name


@pytest.mark.parametrize(
    "raw",
    ["localhost", "corp", "-corp.io", "corp-.io", "co rp.io", "1.2.3.4", "a..io", "x" * 64 + ".io"],
)
def test_bad_names_are_refused(raw: str) -> None:
    with pytest.raises(ValidationError):
        normalize_name(raw)


def test_at_or_under() -> None:
    assert is_at_or_under("corp.io", "corp.io")
    assert is_at_or_under("mail.corp.io", "corp.io")
    assert not is_at_or_under("notcorp.io", "corp.io")
    assert not is_at_or_under("corp.io", "mail.corp.io")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("10.0.0.2", ("10.0.0.2", 53)),
        ("[::1]:5300", ("::1", 5300)),
        ("::1", ("::1", 53)),
    ],
)
def test_nameserver_setting(value: str, expected: tuple[str, int]) -> None:
    assert parse_nameserver(value) == expected


@pytest.mark.parametrize("value", ["dns.google:53", "127.0.0.1:0", "127.0.0.1:x"])
def test_bad_nameserver_setting(value: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_nameserver(value)


def test_spf_names_the_service_host() -> None:
    assert service_host(Settings(public_url="https://Mail.Operator.Example:8443/x")) == (
        "mail.operator.example"
    )
    assert spf_mechanism("mail.operator.example") == "include:mail.operator.example"
    assert spf_mechanism("192.0.2.7") == "ip4:192.0.2.7"
    assert spf_mechanism("2001:db8::1") == "ip6:2001:db8::1"


def rdatas(rdtype: str, *texts: str) -> list[dns.rdata.Rdata]:
    return [
        dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(rdtype), text)
        for text in texts
    ]


SPF = ExpectedRecord(RecordKey.SPF, "SPF", "send", "TXT", "v=spf1 include:mb.example ~all")


def test_spf_matches_when_our_mechanism_is_in_the_only_spf_record() -> None:
    assert matches(SPF, rdatas("TXT", '"v=spf1 include:mb.example ~all"'))
    assert matches(SPF, rdatas("TXT", '"v=spf1 ip4:192.0.2.1 +include:MB.example -all"', '"x"'))
    assert not matches(SPF, rdatas("TXT", '"v=spf1 include:other.example ~all"'))
    two = rdatas("TXT", '"v=spf1 include:mb.example ~all"', '"v=spf1 -all"')
    assert not matches(SPF, two)
    assert not matches(SPF, [])


def test_dkim_mx_and_cname_matching() -> None:
    dkim_record = ExpectedRecord(RecordKey.DKIM, "DKIM", "s._domainkey", "TXT", "v=DKIM1; p=ABCD")
    assert matches(dkim_record, rdatas("TXT", '"v=DKIM1; k=rsa; " "p=AB" "CD"'))
    assert not matches(dkim_record, rdatas("TXT", '"v=DKIM1; k=rsa; p=ABCE"'))
    mx = ExpectedRecord(RecordKey.RETURN_PATH_MX, "SPF", "send", "MX", "mb.example", 10)
    assert matches(mx, rdatas("MX", "20 MB.example."))
    assert not matches(mx, rdatas("MX", "10 other.example."))
    cname = ExpectedRecord(RecordKey.TRACKING, "Tracking", "links", "CNAME", "mb.example")
    assert matches(cname, rdatas("CNAME", "mb.example."))
    assert not matches(cname, rdatas("CNAME", "mb.example.evil."))
