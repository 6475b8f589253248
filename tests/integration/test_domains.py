"""Domains: records to publish, DNS verification against a real loopback server, conflicts,
claims, the plan cap, changes, removal, lists, events, the runner's re-check and the CLI."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import AsyncIterator, Iterable
from datetime import timedelta
from typing import Any

import dkim as dkimpy
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from sqlalchemy import select

from mailbridge.clock import FakeClock
from mailbridge.config import Settings
from mailbridge.mail import dkim
from mailbridge.runner import Runner
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._teams import Role
from mailbridge.services.domains import _domains as domains
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ActivityEvent, Domain
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.dns_server import DnsServer, Zone
from tests.integration.test_auth import assert_error

HOST = "mail.operator.test"
KINDS = {("DKIM", "TXT"): "dkim", ("SPF", "TXT"): "spf", ("SPF", "MX"): "mx"}
KINDS[("Tracking", "CNAME")] = "tracking"


@pytest.fixture
async def dns_server() -> AsyncIterator[DnsServer]:
    server = DnsServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def settings(settings: Settings, dns_server: DnsServer) -> Settings:
    """The shared settings, resolving through the loopback DNS server."""
    return settings.model_copy(
        update={"dns_nameserver": dns_server.address, "public_url": f"https://{HOST}"}
    )


@pytest.fixture
def zone(dns_server: DnsServer) -> Zone:
    return dns_server.zone


async def create(client: httpx.AsyncClient, tenant: Tenant, name: str, **extra: Any) -> Any:
    response = await client.post("/domains", json={"name": name, **extra}, headers=tenant.headers)
    assert response.status_code == 201, response.text
    return response.json()


async def verify(client: httpx.AsyncClient, tenant: Tenant, domain_id: str) -> httpx.Response:
    return await client.post(f"/domains/{domain_id}/verify", headers=tenant.headers)


def publish(zone: Zone, domain: dict[str, Any], kinds: Iterable[str] | None = None) -> None:
    wanted = set(KINDS.values()) if kinds is None else set(kinds)
    records = [r for r in domain["records"] if KINDS[(r["record"], r["type"])] in wanted]
    zone.publish(domain["name"], records)


def statuses(domain: dict[str, Any]) -> dict[str, str]:
    return {KINDS[(r["record"], r["type"])]: r["status"] for r in domain["records"]}


async def events(context: ServiceContext, team_id: str) -> list[tuple[str, dict[str, Any]]]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(ActivityEvent)
            .where(ActivityEvent.team_id == team_id)
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return [(row.type, row.data) for row in rows]


async def stored(context: ServiceContext, domain_id: str) -> Domain:
    async with context.database.session() as session:
        domain = await session.get(Domain, domain_id)
        assert domain is not None
        return domain


# --- create ------------------------------------------------------------------------


async def test_create_answers_the_records_to_publish(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    body = await create(client, tenant, "Corp.IO")
    assert body["object"] == "domain"
    assert body["name"] == "corp.io"
    assert body["status"] == "not_started"
    assert body["region"] == "us-east-1"
    assert body["created_at"].endswith("Z")
    assert (body["open_tracking"], body["click_tracking"], body["tls"]) == (
        False,
        False,
        "opportunistic",
    )
    dkim_record, mx, spf = body["records"]
    assert dkim_record["record"] == "DKIM" and dkim_record["type"] == "TXT"
    assert dkim_record["name"] == "mailbridge._domainkey"
    assert dkim_record["value"].startswith("v=DKIM1; k=rsa; p=")
    assert mx == {
        "record": "SPF",
        "name": "send",
        "type": "MX",
        "ttl": "Auto",
        "status": "not_started",
        "value": HOST,
        "priority": 10,
    }
    assert spf == {
        "record": "SPF",
        "name": "send",
        "type": "TXT",
        "ttl": "Auto",
        "status": "not_started",
        "value": f"v=spf1 include:{HOST} ~all",
    }

    # The published key is the public half of the key mail will be signed with.
    row = await stored(context, body["id"])
    private = serialization.load_pem_private_key(row.dkim_private_key.encode(), password=None)
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert dkim.published_key(dkim_record["value"]) == base64.b64encode(der).decode()
    message = b"From: a@corp.io\r\nTo: b@else.dev\r\nSubject: hi\r\n\r\nbody\r\n"
    signed = dkim.sign(message, "corp.io", row.dkim_selector, row.dkim_private_key)
    txt = {"mailbridge._domainkey.corp.io.": dkim_record["value"].encode()}
    assert dkimpy.verify(signed, dnsfunc=lambda name, timeout=5: txt.get(name.decode()))

    assert await events(context, tenant.team_id) == [("domain.created", body)]


async def test_create_with_tracking_and_own_names(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = await create(
        client,
        tenant,
        "corp.io",
        custom_return_path="Bounces",
        tracking_subdomain="t",
        click_tracking=True,
        region="eu-west-1",
    )
    assert body["region"] == "eu-west-1" and body["tracking_subdomain"] == "t"
    names = [(r["record"], r["type"], r["name"], r["value"]) for r in body["records"]][1:]
    assert names == [
        ("SPF", "MX", "bounces", HOST),
        ("SPF", "TXT", "bounces", f"v=spf1 include:{HOST} ~all"),
        ("Tracking", "CNAME", "t", HOST),
    ]


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({}, "missing_required_field"),
        ({"name": "not a domain"}, "validation_error"),
        ({"name": "localhost"}, "validation_error"),
        ({"name": "corp.io", "region": "mars-1"}, "validation_error"),
        ({"name": "corp.io", "custom_return_path": "a.b"}, "validation_error"),
        ({"name": "corp.io", "receiving": 0}, "validation_error"),  # a boolean, not 0
        ({"name": "corp.io", "capabilities": {"sending": "disabled"}}, "validation_error"),
        ({"name": "corp.io", "capabilities": {"receiving": "yes"}}, "validation_error"),
        ({"name": "corp.io", "capabilities": {"inbound": "enabled"}}, "validation_error"),
        (
            {"name": "corp.io", "receiving": False, "capabilities": {"receiving": "enabled"}},
            "validation_error",
        ),
        ({"name": "corp.io", "open_tracking": "true"}, "validation_error"),
        (
            {"name": "corp.io", "custom_return_path": "x", "tracking_subdomain": "x"},
            "validation_error",
        ),
    ],
)
async def test_create_refusals(
    client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any], name: str
) -> None:
    assert_error(await client.post("/domains", json=body, headers=tenant.headers), 422, name)


async def test_a_team_adds_a_name_once(client: httpx.AsyncClient, tenant: Tenant) -> None:
    await create(client, tenant, "corp.io")
    response = await client.post("/domains", json={"name": "CORP.io."}, headers=tenant.headers)
    assert_error(response, 422, "validation_error")


# --- verification ------------------------------------------------------------------


async def test_verify_with_every_record_published(
    client: httpx.AsyncClient, tenant: Tenant, zone: Zone, context: ServiceContext
) -> None:
    created = await create(client, tenant, "corp.io", open_tracking=True)
    publish(zone, created)
    response = await verify(client, tenant, created["id"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "verified"
    assert statuses(body) == dict.fromkeys(["dkim", "mx", "spf", "tracking"], "verified")
    assert set(zone.queries) == {
        ("mailbridge._domainkey.corp.io", "TXT"),
        ("send.corp.io", "MX"),
        ("send.corp.io", "TXT"),
        ("links.corp.io", "CNAME"),
    }
    fetched = (await client.get(f"/domains/{created['id']}", headers=tenant.headers)).json()
    assert fetched == body
    row = await stored(context, created["id"])
    assert row.verified_at is not None and row.last_checked_at is not None
    assert [kind for kind, _ in await events(context, tenant.team_id)] == [
        "domain.created",
        "domain.updated",
    ]
    async with context.database.session() as session:
        found = await domains.sending_domain(session, tenant.team_id, "CORP.io")
        assert found is not None and found.id == created["id"] and domains.may_send(found)
        assert await domains.sending_domain(session, "another-team", "corp.io") is None


@pytest.mark.parametrize(
    ("published", "expected"),
    [
        ({"dkim", "spf", "mx"}, "partially_verified"),
        ({"dkim", "spf"}, "partially_verified"),
        ({"dkim", "mx", "tracking"}, "partially_failed"),
        ({"spf"}, "partially_failed"),
        ({"mx", "tracking"}, "failed"),
        (set(), "failed"),
    ],
)
async def test_verify_with_some_records_published(
    client: httpx.AsyncClient,
    tenant: Tenant,
    zone: Zone,
    context: ServiceContext,
    published: set[str],
    expected: str,
) -> None:
    created = await create(client, tenant, "corp.io", click_tracking=True)
    publish(zone, created, published)
    body = (await verify(client, tenant, created["id"])).json()
    assert body["status"] == expected
    assert statuses(body) == {
        kind: "verified" if kind in published else "failed"
        for kind in ("dkim", "mx", "spf", "tracking")
    }
    async with context.database.session() as session:
        may_send = await domains.sending_domain(session, tenant.team_id, "corp.io") is not None
    assert may_send is (expected != "failed")


async def test_a_record_with_another_value_fails(
    client: httpx.AsyncClient, tenant: Tenant, zone: Zone
) -> None:
    created = await create(client, tenant, "corp.io")
    publish(zone, created, {"mx", "spf"})
    zone.add_txt("mailbridge._domainkey.corp.io", dkim.generate_key_pair().txt_value)
    body = (await verify(client, tenant, created["id"])).json()
    assert statuses(body) == {"dkim": "failed", "mx": "verified", "spf": "verified"}
    assert body["status"] == "partially_failed"


async def test_an_inconclusive_check_is_pending_and_never_demotes(
    client: httpx.AsyncClient, tenant: Tenant, zone: Zone
) -> None:
    created = await create(client, tenant, "corp.io")
    for name in ("mailbridge._domainkey.corp.io", "send.corp.io"):
        zone.fail(name)
    body = (await verify(client, tenant, created["id"])).json()
    assert body["status"] == "pending"
    assert set(statuses(body).values()) == {"pending"}

    zone.clear()
    publish(zone, created)
    assert (await verify(client, tenant, created["id"])).json()["status"] == "verified"

    zone.fail("send.corp.io")  # a DNS outage: the records stay verified
    body = (await verify(client, tenant, created["id"])).json()
    assert body["status"] == "verified"


# --- holding a name ----------------------------------------------------------------


async def test_another_teams_verified_domain_parent_or_subdomain_conflicts(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone
) -> None:
    owner, other = await tenants.create(plan="pro"), await tenants.create()
    for name in ("corp.io", "mail.acme.dev"):
        created = await create(client, owner, name)
        publish(zone, created)
        assert (await verify(client, owner, created["id"])).json()["status"] == "verified"
    await create(client, owner, "quiet.dev")  # not verified: holds nothing
    for name in ("corp.io", "eu.mail.corp.io", "acme.dev", "mail.acme.dev"):
        response = await client.post("/domains", json={"name": name}, headers=other.headers)
        assert_error(response, 409, "domain_conflict")
    await create(client, other, "quiet.dev")
    await create(client, other, "notcorp.io")
    await create(client, other, "other.acme.dev")


async def test_verifying_a_name_another_team_verified_first_conflicts(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone, context: ServiceContext
) -> None:
    first, second = await tenants.create(), await tenants.create()
    late = await create(client, second, "corp.io")
    early = await create(client, first, "corp.io")
    publish(zone, early)
    assert (await verify(client, first, early["id"])).json()["status"] == "verified"
    assert_error(await verify(client, second, late["id"]), 409, "domain_conflict")
    assert (await stored(context, late["id"])).status == "not_started"


# --- claims ------------------------------------------------------------------------


async def test_a_claim_moves_the_domain_once_the_challenge_resolves(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone, context: ServiceContext
) -> None:
    holder, claimant = await tenants.create(plan="pro"), await tenants.create(plan="pro")
    copy = await create(client, claimant, "corp.io")  # made before the holder verified
    held = await create(client, holder, "corp.io")
    sub = await create(client, holder, "news.corp.io")
    for domain in (held, sub):
        publish(zone, domain)
        assert (await verify(client, holder, domain["id"])).json()["status"] == "verified"

    started = await client.post(
        "/domains/claim", json={"name": "corp.io"}, headers=claimant.headers
    )
    assert started.status_code == 201, started.text
    claim = started.json()
    assert claim["object"] == "domain_claim" and claim["status"] == "pending"
    assert claim["name"] == "corp.io" and claim["domain_id"] == held["id"]
    record = claim["record"]
    assert record["type"] == "TXT" and record["name"] == "_mailbridge-challenge"
    assert record["value"].startswith("mailbridge-claim=") and record["ttl"] == "Auto"
    assert claim["expires_at"] > claim["created_at"]

    again = await client.post("/domains/claim", json={"name": "corp.io"}, headers=claimant.headers)
    assert again.status_code == 200
    assert (again.json()["id"], again.json()["status"]) == (claim["id"], "pending")
    shown = await client.get(f"/domains/{held['id']}/claim", headers=claimant.headers)
    assert shown.json()["id"] == claim["id"]
    assert (await client.get(f"/domains/{held['id']}", headers=claimant.headers)).status_code == 404

    zone.add_txt("_mailbridge-challenge.corp.io", record["value"])
    done = await client.post(f"/domains/{held['id']}/claim/verify", headers=claimant.headers)
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "completed" and done.json()["domain_id"] == held["id"]

    moved = (await client.get(f"/domains/{held['id']}", headers=claimant.headers)).json()
    assert moved["status"] == "verified"
    assert moved["records"][0]["value"] == held["records"][0]["value"]  # same DKIM key
    assert (await client.get(f"/domains/{held['id']}", headers=holder.headers)).status_code == 404
    listed = (await client.get("/domains", headers=claimant.headers)).json()["data"]
    assert {d["id"] for d in listed} == {held["id"], sub["id"]}
    assert (await client.get("/domains", headers=holder.headers)).json()["data"] == []
    assert (await stored(context, sub["id"])).team_id == claimant.team_id

    claimant_events = [(k, d["id"]) for k, d in await events(context, claimant.team_id)]
    assert claimant_events[-3] == ("domain.deleted", copy["id"])  # its own copy, superseded
    assert set(claimant_events[-2:]) == {
        ("domain.updated", sub["id"]),
        ("domain.updated", held["id"]),
    }
    holder_events = [e for e in await events(context, holder.team_id) if e[0] == "domain.deleted"]
    assert {(d["id"], d["reason"]) for _, d in holder_events} == {
        (held["id"], "claimed"),
        (sub["id"], "claimed"),
    }
    settled = await client.post(
        "/domains/claim", json={"name": "corp.io"}, headers=claimant.headers
    )
    assert settled.status_code == 200 and settled.json()["status"] == "completed"


async def test_the_claim_call_itself_completes_once_the_record_resolves(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone
) -> None:
    holder, claimant = await tenants.create(), await tenants.create()
    held = await create(client, holder, "corp.io")
    publish(zone, held)
    await verify(client, holder, held["id"])
    claim = (
        await client.post("/domains/claim", json={"name": "corp.io"}, headers=claimant.headers)
    ).json()
    zone.add_txt("_mailbridge-challenge.corp.io", "mailbridge-claim=wrong")
    again = await client.post("/domains/claim", json={"name": "corp.io"}, headers=claimant.headers)
    assert again.json()["status"] == "pending"
    zone.add_txt("_mailbridge-challenge.corp.io", claim["record"]["value"])
    done = await client.post("/domains/claim", json={"name": "corp.io"}, headers=claimant.headers)
    assert done.status_code == 200 and done.json()["status"] == "completed"
    got = await client.get(f"/domains/{held['id']}", headers=claimant.headers)
    assert got.json()["status"] == "verified"


async def test_claim_refusals(client: httpx.AsyncClient, tenants: Tenants, zone: Zone) -> None:
    holder, claimant = await tenants.create(), await tenants.create()
    held = await create(client, holder, "corp.io")
    publish(zone, held)
    await verify(client, holder, held["id"])
    for name, status, error in [
        ("free.dev", 422, "validation_error"),  # nobody holds it: just add it
        ("mail.corp.io", 409, "domain_conflict"),  # held through its parent: claim the parent
        ("not a name", 422, "validation_error"),
    ]:
        response = await client.post(
            "/domains/claim", json={"name": name}, headers=claimant.headers
        )
        assert_error(response, status, error)
    for path in (f"/domains/{held['id']}/claim", "/domains/nope/claim"):
        assert_error(await client.get(path, headers=claimant.headers), 404, "not_found")


# --- the plan cap ------------------------------------------------------------------


async def test_verifying_past_the_plan_cap_is_402(
    client: httpx.AsyncClient, tenant: Tenant, zone: Zone, context: ServiceContext
) -> None:
    first = await create(client, tenant, "corp.io")  # the free plan allows one
    second = await create(client, tenant, "acme.dev")
    publish(zone, first)
    publish(zone, second)
    assert (await verify(client, tenant, first["id"])).json()["status"] == "verified"
    assert_error(await verify(client, tenant, second["id"]), 402, "plan_limit_reached")
    assert (await stored(context, second["id"])).status == "not_started"
    assert not [q for q in zone.queries if q[0].endswith("acme.dev")]  # refused before DNS
    assert (await verify(client, tenant, first["id"])).status_code == 200  # counted already

    await client.delete(f"/domains/{first['id']}", headers=tenant.headers)
    assert (await verify(client, tenant, second["id"])).json()["status"] == "verified"


async def test_a_claim_past_the_plan_cap_is_402(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone, context: ServiceContext
) -> None:
    holder, claimant = await tenants.create(), await tenants.create()
    own = await create(client, claimant, "acme.dev")
    held = await create(client, holder, "corp.io")
    for domain, tenant in ((own, claimant), (held, holder)):
        publish(zone, domain)
        await verify(client, tenant, domain["id"])
    claim = (
        await client.post("/domains/claim", json={"name": "corp.io"}, headers=claimant.headers)
    ).json()
    zone.add_txt("_mailbridge-challenge.corp.io", claim["record"]["value"])
    response = await client.post(f"/domains/{held['id']}/claim/verify", headers=claimant.headers)
    assert_error(response, 402, "plan_limit_reached")
    assert (await stored(context, held["id"])).team_id == holder.team_id
    shown = await client.get(f"/domains/{held['id']}/claim", headers=claimant.headers)
    assert shown.json()["status"] == "pending"


# --- change, remove, list ----------------------------------------------------------


async def test_patch_changes_tracking_and_tls(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone, context: ServiceContext
) -> None:
    tenant, stranger = await tenants.create(), await tenants.create()
    created = await create(client, tenant, "corp.io")
    publish(zone, created)
    await verify(client, tenant, created["id"])
    path = f"/domains/{created['id']}"
    changes = {"id": created["id"], "open_tracking": True, "tls": "enforced"}
    response = await client.patch(path, json=changes, headers=tenant.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["open_tracking"], body["click_tracking"], body["tls"]) == (True, False, "enforced")
    assert body["records"][-1] == {
        "record": "Tracking",
        "name": "links",
        "type": "CNAME",
        "ttl": "Auto",
        "status": "not_started",
        "value": HOST,
    }
    assert body["status"] == "partially_verified"  # the new record is not published yet

    publish(zone, body, {"tracking"})
    assert (await verify(client, tenant, created["id"])).json()["status"] == "verified"
    moved = (
        await client.patch(path, json={"tracking_subdomain": "t"}, headers=tenant.headers)
    ).json()
    assert moved["records"][-1]["name"] == "t" and moved["records"][-1]["status"] == "not_started"
    off = (await client.patch(path, json={"open_tracking": False}, headers=tenant.headers)).json()
    assert off["status"] == "verified" and len(off["records"]) == 3

    assert_error(
        await client.patch(path, json={"tls": "sometimes"}, headers=tenant.headers),
        422,
        "validation_error",
    )
    assert_error(
        await client.patch(path, json={"tls": "enforced"}, headers=stranger.headers),
        404,
        "not_found",
    )
    assert_error(
        await client.patch("/domains/nope", json={}, headers=tenant.headers), 404, "not_found"
    )
    kinds = [kind for kind, _ in await events(context, tenant.team_id)]
    assert kinds.count("domain.updated") == 5  # two checks and three changes


async def test_delete(client: httpx.AsyncClient, tenants: Tenants, context: ServiceContext) -> None:
    tenant, stranger = await tenants.create(), await tenants.create()
    created = await create(client, tenant, "corp.io")
    path = f"/domains/{created['id']}"
    assert_error(await client.delete(path, headers=stranger.headers), 404, "not_found")
    response = await client.delete(path, headers=tenant.headers)
    assert response.status_code == 200
    assert response.json() == {"object": "domain", "id": created["id"], "deleted": True}
    assert_error(await client.get(path, headers=tenant.headers), 404, "not_found")
    assert_error(await client.delete(path, headers=tenant.headers), 404, "not_found")
    last_kind, last_data = (await events(context, tenant.team_id))[-1]
    assert last_kind == "domain.deleted" and last_data["id"] == created["id"]


async def test_list_is_paginated_and_scoped(client: httpx.AsyncClient, tenants: Tenants) -> None:
    tenant, stranger = await tenants.create(), await tenants.create()
    ids = [(await create(client, tenant, f"d{i}.corp.io"))["id"] for i in range(3)]
    first = (await client.get("/domains?limit=2", headers=tenant.headers)).json()
    assert first["object"] == "list" and first["has_more"] is True
    assert [d["id"] for d in first["data"]] == [ids[2], ids[1]]
    assert set(first["data"][0]) == {
        "object", "id", "name", "status", "created_at", "region", "capabilities",
    }  # fmt: skip
    rest = (await client.get(f"/domains?limit=2&after={ids[1]}", headers=tenant.headers)).json()
    assert [d["id"] for d in rest["data"]] == [ids[0]] and rest["has_more"] is False
    assert (await client.get("/domains", headers=stranger.headers)).json()["data"] == []
    response = await client.get(f"/domains?after={ids[0]}", headers=stranger.headers)
    assert_error(response, 422, "validation_error")


# --- the runner ----------------------------------------------------------------------


async def test_the_runner_rechecks_domains_whose_check_is_old(
    client: httpx.AsyncClient, tenants: Tenants, zone: Zone, context: ServiceContext
) -> None:
    tenant = await tenants.create(plan="pro")
    checked = await create(client, tenant, "corp.io")
    publish(zone, checked)
    await verify(client, tenant, checked["id"])
    untouched = await create(client, tenant, "acme.dev")  # nobody asked to verify it
    async with context.database.session() as session:
        trusted = await domains.create_domain(
            session, context.clock, context.settings, tenant.team_id, "ops.dev", verified=True
        )
    zone.remove("mailbridge._domainkey.corp.io")
    zone.queries.clear()

    interval = timedelta(seconds=context.settings.domain_recheck_interval)
    soon = ServiceContext(context.settings, context.database, FakeClock(context.clock.now()))
    assert await Runner(soon).run_tick_now("recheck-domains") == 0  # checked recently
    later = FakeClock(context.clock.now() + interval + timedelta(seconds=1))
    runner = Runner(ServiceContext(context.settings, context.database, later))
    assert await runner.run_tick_now("recheck-domains") == 1
    assert await runner.run_tick_now("recheck-domains") == 0  # claimed: stamped

    body = (await client.get(f"/domains/{checked['id']}", headers=tenant.headers)).json()
    assert body["status"] == "partially_failed" and statuses(body)["dkim"] == "failed"
    assert (await stored(context, checked["id"])).last_checked_at == later.now()
    assert {name for name, _ in zone.queries} == {"mailbridge._domainkey.corp.io", "send.corp.io"}
    assert (await stored(context, untouched["id"])).status == "not_started"
    assert (await stored(context, trusted.id)).status == "verified"
    last_kind, last_data = (await events(context, tenant.team_id))[-1]
    assert (last_kind, last_data["status"]) == ("domain.updated", "partially_failed")


# --- the operator command --------------------------------------------------------


async def mailbridge_cli(settings: Settings, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env["MAILBRIDGE_DATA_DIR"] = str(settings.data_dir)
    env["MAILBRIDGE_DATABASE_URL"] = str(settings.database_url)
    env["MAILBRIDGE_PUBLIC_URL"] = settings.public_url
    if settings.database_schema:
        env["MAILBRIDGE_DATABASE_SCHEMA"] = settings.database_schema
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mailbridge",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_operator_adds_a_verified_domain(
    client: httpx.AsyncClient, tenants: Tenants, settings: Settings, zone: Zone
) -> None:
    only = await tenants.create()
    code, out, err = await mailbridge_cli(
        settings, "admin", "domains", "add", "Corp.io", "--verified"
    )
    assert code == 0, err
    added = json.loads(out)
    assert added["name"] == "corp.io" and added["team_id"] == only.team_id
    assert added["status"] == "verified"
    assert set(statuses(added).values()) == {"verified"}
    got = (await client.get(f"/domains/{added['id']}", headers=only.headers)).json()
    assert got["status"] == "verified" and got["records"] == added["records"]
    assert zone.queries == []  # DNS is checked elsewhere

    other = await tenants.create()
    code, out, err = await mailbridge_cli(
        settings, "admin", "domains", "add", "mail.corp.io", "--team", other.team_id, "--verified"
    )
    assert code == 1 and out == ""
    assert json.loads(err)["name"] == "domain_conflict"
    code, out, err = await mailbridge_cli(settings, "admin", "domains", "add", "acme.dev")
    assert code == 1 and json.loads(err)["name"] == "cli_error"  # two teams: --team needed
    code, out, err = await mailbridge_cli(
        settings, "admin", "domains", "add", "acme.dev", "--team", other.team_id
    )
    assert code == 0, err
    assert json.loads(out)["status"] == "not_started"
    code, out, err = await mailbridge_cli(
        settings, "admin", "domains", "add", "acme.dev", "--team", other.team_id
    )
    assert code == 1 and json.loads(err)["name"] == "validation_error"  # exists already
    code, out, err = await mailbridge_cli(
        settings, "admin", "domains", "add", "acme.dev", "--team", other.team_id, "--verified"
    )
    assert code == 0, err
    assert json.loads(out)["status"] == "verified"


async def test_who_may_call(client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant) -> None:
    created = await create(client, tenant, "corp.io")
    _id, sending = await tenants.key(tenant, Permission.SENDING_ACCESS)
    for method, path in [
        ("GET", "/domains"),
        ("GET", f"/domains/{created['id']}"),
        ("POST", f"/domains/{created['id']}/verify"),
    ]:
        response = await client.request(method, path, headers=bearer(sending))
        assert_error(response, 401, "restricted_api_key")
    viewer = await tenants.member(tenant, Role.VIEW_ONLY)
    assert (await client.get("/domains", headers=bearer(viewer))).status_code == 200
    for method, path in [
        ("POST", "/domains"),
        ("PATCH", f"/domains/{created['id']}"),
        ("DELETE", f"/domains/{created['id']}"),
        ("POST", f"/domains/{created['id']}/verify"),
        ("POST", "/domains/claim"),
    ]:
        response = await client.request(method, path, headers=bearer(viewer), json={"name": "x.io"})
        assert_error(response, 403, "view_only_member")


async def test_capabilities_as_resend_names_them(client: httpx.AsyncClient, tenant: Tenant) -> None:
    """Resend's `capabilities`: receiving switches the domain's receiving; sending is
    always enabled (a verified mailbridge domain sends)."""
    response = await client.post(
        "/domains",
        json={"name": "corp.io", "capabilities": {"sending": "enabled", "receiving": "enabled"}},
        headers=tenant.headers,
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["receiving"] is True
    assert created["capabilities"] == {"sending": "enabled", "receiving": "enabled"}
    response = await client.patch(
        f"/domains/{created['id']}",
        json={"capabilities": {"receiving": "disabled"}},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["receiving"] is False
    assert response.json()["capabilities"] == {"sending": "enabled", "receiving": "disabled"}
    listed = (await client.get("/domains", headers=tenant.headers)).json()["data"]
    assert listed[0]["capabilities"] == {"sending": "enabled", "receiving": "disabled"}
