"""GET /logs and /logs/:id: every API request recorded, secrets never."""

from __future__ import annotations

import httpx

from mailbridge.services.accounts._teams import Role
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error


async def test_every_request_is_recorded(client: httpx.AsyncClient, tenant: Tenant) -> None:
    await client.get("/api-keys", headers=tenant.headers, params={"limit": 5})
    await client.get("/missing", headers=tenant.headers)
    body = (await client.get("/logs", headers=tenant.headers)).json()
    assert body["object"] == "list"
    missing, listed = body["data"][:2]
    assert (missing["method"], missing["endpoint"], missing["response_status"]) == (
        "GET",
        "/missing",
        404,
    )
    assert listed["endpoint"] == "/api-keys" and listed["query"] == "limit=5"
    assert listed["response_status"] == 200
    assert listed["api_key_id"] == tenant.key_id
    assert listed["user_agent"] == "mailbridge-tests/1.0"
    assert isinstance(listed["duration_ms"], int) and listed["duration_ms"] >= 0
    assert listed["created_at"].endswith("Z")


async def test_bodies_are_kept_with_secrets_redacted(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    created = await client.post(
        "/api-keys", headers=bearer(admin), json={"name": "deploy", "password": "hunter2"}
    )
    token = created.json()["token"]
    logs = (await client.get("/logs", headers=tenant.headers)).json()["data"]
    entry = next(item for item in logs if item["method"] == "POST")
    assert "request_body" not in entry  # the list is light
    full = (await client.get(f"/logs/{entry['id']}", headers=tenant.headers)).json()
    assert full["request_body"] == {"name": "deploy", "password": "[redacted]"}
    assert full["response_body"] == {"id": created.json()["id"], "token": "[redacted]"}
    assert token not in str(full) and "hunter2" not in str(full)
    assert full["api_key_id"] is None  # a member's request, not a key's


async def test_logs_belong_to_their_team(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    await client.get("/api-keys", headers=other.headers)
    theirs = (await client.get("/logs", headers=other.headers)).json()["data"][0]
    ours = (await client.get("/logs", headers=tenant.headers)).json()["data"]
    assert theirs["id"] not in {item["id"] for item in ours}
    assert_error(
        await client.get(f"/logs/{theirs['id']}", headers=tenant.headers), 404, "not_found"
    )


async def test_a_key_in_use_gets_last_used_at(client: httpx.AsyncClient, tenant: Tenant) -> None:
    before = (await client.get("/api-keys", headers=tenant.headers)).json()["data"][0]
    assert before["last_used_at"] is None
    await client.get("/logs", headers=tenant.headers)  # flushes the log, stamping the key
    after = (await client.get("/api-keys", headers=tenant.headers)).json()["data"][0]
    assert after["last_used_at"] is not None


async def test_unauthenticated_requests_are_not_attributed(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    await client.get("/api-keys")
    logs = (await client.get("/logs", headers=tenant.headers)).json()["data"]
    assert all(item["api_key_id"] == tenant.key_id for item in logs)
