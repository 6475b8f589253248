"""The Resend Python SDK manages domains on a real ``mailbridge serve``; DNS is on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import resend
import resend.exceptions

from tests.acceptance.conftest import Server, admin
from tests.integration.dns_server import ThreadedDnsServer

HOST = "mail.operator.test"


@pytest.fixture
def dns_server() -> Iterator[ThreadedDnsServer]:
    server = ThreadedDnsServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def environment(environment: dict[str, str], dns_server: ThreadedDnsServer) -> dict[str, str]:
    return {
        **environment,
        "MAILBRIDGE_DNS_NAMESERVER": dns_server.address,
        "MAILBRIDGE_PUBLIC_URL": f"https://{HOST}",
    }


def publish(dns_server: ThreadedDnsServer, domain: Any) -> None:
    dns_server.zone.publish(domain["name"], list(domain["records"]))


def test_sdk_creates_lists_gets_updates_verifies_and_removes(
    sdk: Server, dns_server: ThreadedDnsServer
) -> None:
    created: Any = resend.Domains.create({"name": "corp.io", "custom_return_path": "bounces"})
    assert created["name"] == "corp.io" and created["status"] == "not_started"
    kinds = [(r["record"], r["type"], r["name"]) for r in created["records"]]
    assert kinds == [
        ("DKIM", "TXT", "mailbridge._domainkey"),
        ("SPF", "MX", "bounces"),
        ("SPF", "TXT", "bounces"),
    ]
    other: Any = resend.Domains.create({"name": "acme.dev"})

    listed: Any = resend.Domains.list()
    assert listed["object"] == "list" and listed["has_more"] is False
    assert [d["id"] for d in listed["data"]] == [other["id"], created["id"]]
    assert resend.Domains.list({"limit": 1})["has_more"] is True

    updated: Any = resend.Domains.update(
        {"id": created["id"], "open_tracking": True, "click_tracking": True, "tls": "enforced"}
    )
    assert (updated["open_tracking"], updated["click_tracking"], updated["tls"]) == (
        True,
        True,
        "enforced",
    )
    assert updated["records"][-1]["record"] == "Tracking"

    fetched: Any = resend.Domains.get(created["id"])
    assert fetched["id"] == created["id"] and fetched["tls"] == "enforced"
    publish(dns_server, fetched)
    verified: Any = resend.Domains.verify(created["id"])
    assert verified["status"] == "verified"
    assert {r["status"] for r in verified["records"]} == {"verified"}
    assert resend.Domains.get(created["id"])["status"] == "verified"

    with pytest.raises(resend.exceptions.ResendError) as capped:
        resend.Domains.verify(other["id"])  # the free plan verifies one domain
    assert capped.value.code == 402 and capped.value.error_type == "plan_limit_reached"

    removed: Any = resend.Domains.remove(created["id"])
    assert (removed["object"], removed["id"], removed["deleted"]) == ("domain", created["id"], True)
    with pytest.raises(resend.exceptions.ResendError) as missing:
        resend.Domains.get(created["id"])
    assert missing.value.code == 404 and missing.value.error_type == "not_found"
    failed: Any = resend.Domains.verify(other["id"])  # nothing published
    assert failed["status"] == "failed"
    assert sdk.stop() == 0


def test_sdk_claims_a_domain_verified_by_another_team(
    sdk: Server, dns_server: ThreadedDnsServer
) -> None:
    held: Any = resend.Domains.create({"name": "corp.io"})
    publish(dns_server, held)
    assert resend.Domains.verify(held["id"])["status"] == "verified"

    admin("teams", "create", "--name", "newcomer", env=sdk.env)
    resend.api_key = sdk.create_key("--team", "newcomer")["token"]
    with pytest.raises(resend.exceptions.ResendError) as conflict:
        resend.Domains.create({"name": "corp.io"})
    assert conflict.value.code == 409 and conflict.value.error_type == "domain_conflict"

    claim: Any = resend.Domains.Claims.create({"name": "corp.io"})
    assert claim["object"] == "domain_claim" and claim["status"] == "pending"
    assert claim["domain_id"] == held["id"]
    assert resend.Domains.Claims.verify(held["id"])["status"] == "pending"
    dns_server.zone.add_txt(f"{claim['record']['name']}.corp.io", claim["record"]["value"])
    assert resend.Domains.Claims.verify(held["id"])["status"] == "completed"
    assert resend.Domains.Claims.get(held["id"])["id"] == claim["id"]
    moved: Any = resend.Domains.get(held["id"])
    assert moved["status"] == "verified"
    assert moved["records"][0]["value"] == held["records"][0]["value"]  # the same DKIM key
    assert [d["id"] for d in resend.Domains.list()["data"]] == [held["id"]]
    assert sdk.stop() == 0
