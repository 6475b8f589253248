"""Spec §5: who may call what, with the exact status and name of every refusal."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._teams import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ApiKey
from tests.integration.conftest import Tenant, Tenants, bearer


def assert_error(response: httpx.Response, status: int, name: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"statusCode", "name", "message"}
    assert body["statusCode"] == status
    assert body["name"] == name
    assert body["message"]


async def test_a_valid_key_lists_keys(client: httpx.AsyncClient, tenant: Tenant) -> None:
    response = await client.get("/api-keys", headers=tenant.headers)
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["data"]] == [tenant.key_id]


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer   ", "Basic abc"])
async def test_no_key_is_401_missing_api_key(
    client: httpx.AsyncClient, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    assert_error(await client.get("/api-keys", headers=headers), 401, "missing_api_key")


@pytest.mark.parametrize(
    "token",
    ["mb_nope", "re_123", "mb_AAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "mbs_x_y"],
)
async def test_unknown_key_is_403_invalid_api_key(client: httpx.AsyncClient, token: str) -> None:
    assert_error(await client.get("/api-keys", headers=bearer(token)), 403, "invalid_api_key")


async def test_right_prefix_wrong_secret_is_invalid(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    forged = tenant.token[:-4] + ("AAAA" if not tenant.token.endswith("AAAA") else "BBBB")
    assert_error(await client.get("/api-keys", headers=bearer(forged)), 403, "invalid_api_key")


async def test_revoked_key_is_invalid(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    key_id, token = await tenants.key(tenant)
    assert (await client.get("/api-keys", headers=bearer(token))).status_code == 200
    admin = await tenants.member(tenant, Role.ADMIN)
    revoked = await client.delete(f"/api-keys/{key_id}", headers=bearer(admin))
    assert revoked.json() == {"object": "api_key", "id": key_id, "deleted": True}
    assert_error(await client.get("/api-keys", headers=bearer(token)), 403, "invalid_api_key")


async def test_expired_key_is_invalid(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant, context: ServiceContext
) -> None:
    _id, expired = await tenants.key(tenant, expires_at=context.clock.now() - timedelta(seconds=1))
    _id, live = await tenants.key(tenant, expires_at=context.clock.now() + timedelta(hours=1))
    assert_error(await client.get("/api-keys", headers=bearer(expired)), 403, "invalid_api_key")
    assert (await client.get("/api-keys", headers=bearer(live))).status_code == 200


async def test_missing_user_agent_is_403_validation_error(app: object, tenant: Tenant) -> None:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as bare:
        request = bare.build_request("GET", "/api-keys", headers=tenant.headers)
        del request.headers["User-Agent"]
        response = await bare.send(request)
    assert_error(response, 403, "validation_error")


async def test_sending_key_is_restricted_outside_send_endpoints(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    _id, token = await tenants.key(tenant, Permission.SENDING_ACCESS, domain="mail.corp.io")
    assert_error(await client.get("/api-keys", headers=bearer(token)), 401, "restricted_api_key")
    assert_error(await client.get("/logs", headers=bearer(token)), 401, "restricted_api_key")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api-keys"),
        ("PATCH", "/api-keys/1"),
        ("DELETE", "/api-keys/1"),
        ("POST", "/api-keys/1/rotate"),
        ("PUT", "/api-keys/1/scope"),
    ],
)
async def test_key_changes_are_dashboard_only(
    client: httpx.AsyncClient, tenant: Tenant, method: str, path: str
) -> None:
    response = await client.request(method, path, headers=tenant.headers, json={"name": "x"})
    assert_error(response, 403, "dashboard_only")


@pytest.mark.parametrize(("method", "path"), [("PUT", "/api-keys/1"), ("DELETE", "/api-keys")])
async def test_a_method_the_document_does_not_name_is_405(
    client: httpx.AsyncClient, tenant: Tenant, method: str, path: str
) -> None:
    response = await client.request(method, path, headers=tenant.headers)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"]


async def test_an_api_key_cannot_revoke_even_its_own_team_key(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    key_id, token = await tenants.key(tenant)
    assert_error(
        await client.delete(f"/api-keys/{key_id}", headers=tenant.headers), 403, "dashboard_only"
    )
    assert (await client.get("/api-keys", headers=bearer(token))).status_code == 200


async def test_view_only_member_reads_but_never_writes(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    viewer = await tenants.member(tenant, Role.VIEW_ONLY)
    assert (await client.get("/api-keys", headers=bearer(viewer))).status_code == 200
    assert (await client.get("/logs", headers=bearer(viewer))).status_code == 200
    assert_error(
        await client.post("/api-keys", headers=bearer(viewer), json={"name": "x"}),
        403,
        "view_only_member",
    )
    assert_error(
        await client.delete(f"/api-keys/{tenant.key_id}", headers=bearer(viewer)),
        403,
        "view_only_member",
    )


async def test_admin_member_creates_a_key_that_works(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant, context: ServiceContext
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    created = await client.post(
        "/api-keys",
        headers=bearer(admin),
        json={"name": "ci", "permission": "sending_access", "domain": "Mail.Corp.io"},
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert set(body) == {"id", "token"} and body["token"].startswith("mb_")
    listed = (await client.get("/api-keys", headers=tenant.headers)).json()["data"]
    new = next(item for item in listed if item["id"] == body["id"])
    assert new["permission"] == "sending_access" and new["domain"] == "mail.corp.io"
    assert "token" not in new and all(body["token"] not in str(v) for v in new.values())
    assert_error(
        await client.get("/api-keys", headers=bearer(body["token"])), 401, "restricted_api_key"
    )
    async with context.database.session() as session:
        row = await session.scalar(select(ApiKey).where(ApiKey.id == body["id"]))
    assert row is not None
    assert body["token"] not in (row.token_hash, row.token_prefix)
    assert len(row.token_hash) == 64


async def test_a_member_of_another_team_cannot_revoke_our_key(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    outsider = await tenants.member(other, Role.OWNER)
    assert_error(
        await client.delete(f"/api-keys/{tenant.key_id}", headers=bearer(outsider)),
        404,
        "not_found",
    )
    assert (await client.get("/api-keys", headers=tenant.headers)).status_code == 200


async def test_health_needs_no_key(client: httpx.AsyncClient) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


async def test_a_member_renames_and_rescopes_a_key_and_it_holds_at_once(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    key_id, token = await tenants.key(tenant)
    assert (await client.get("/api-keys", headers=bearer(token))).status_code == 200
    changed = await client.patch(
        f"/api-keys/{key_id}", headers=bearer(admin),
        json={"name": "deploy", "permission": "sending_access", "domain": "Mail.Corp.io"},
    )  # fmt: skip
    assert changed.status_code == 200, changed.text
    assert {k: changed.json()[k] for k in ("id", "name", "permission", "domain")} == {
        "id": key_id, "name": "deploy", "permission": "sending_access", "domain": "mail.corp.io",
    }  # fmt: skip
    # the same token, now sending-only: refused at once (no cached scope)
    assert_error(await client.get("/api-keys", headers=bearer(token)), 401, "restricted_api_key")
    back = await client.patch(
        f"/api-keys/{key_id}", headers=bearer(admin), json={"permission": "full_access"}
    )
    assert (back.json()["permission"], back.json()["domain"]) == ("full_access", None)
    assert (await client.get("/api-keys", headers=bearer(token))).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "x" * 51},
        {"permission": "root"},
        {"permission": "full_access", "domain": "corp.io"},
        {"name": None},
        [],
    ],
)
async def test_a_bad_key_change_is_a_validation_error_and_changes_nothing(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant, body: object
) -> None:
    owner = await tenants.member(tenant, Role.OWNER)
    response = await client.patch(f"/api-keys/{tenant.key_id}", headers=bearer(owner), json=body)
    assert response.status_code == 422 and response.json()["name"] == "validation_error"
    [key] = (await client.get("/api-keys", headers=tenant.headers)).json()["data"]
    assert key["permission"] == "full_access" and key["domain"] is None


async def test_key_changes_by_a_viewer_or_another_team_are_refused(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    path = f"/api-keys/{tenant.key_id}"
    viewer = await tenants.member(tenant, Role.VIEW_ONLY)
    refused = await client.patch(path, headers=bearer(viewer), json={"name": "x"})
    assert_error(refused, 403, "view_only_member")
    outsider = await tenants.member(await tenants.create(), Role.OWNER)
    unknown = await client.patch(path, headers=bearer(outsider), json={"name": "x"})
    assert_error(unknown, 404, "not_found")


async def _member_id(client: httpx.AsyncClient, token: str, email_prefix: str) -> str:
    listed = (await client.get("/members", headers=bearer(token))).json()["data"]
    return str(next(m["id"] for m in listed if m["email"].startswith(email_prefix)))


async def test_owners_and_admins_manage_members_and_a_team_keeps_an_owner(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    owner = await tenants.member(tenant, Role.OWNER)
    admin = await tenants.member(tenant, Role.ADMIN)
    viewer = await tenants.member(tenant, Role.VIEW_ONLY)
    listed = await client.get("/members", headers=bearer(viewer))  # a viewer may look
    assert listed.status_code == 200
    assert sorted(m["role"] for m in listed.json()["data"]) == ["admin", "owner", "view_only"]
    assert_error(await client.get("/members", headers=tenant.headers), 403, "dashboard_only")
    owner_id = await _member_id(client, owner, "owner-")
    viewer_id = await _member_id(client, owner, "view_only-")
    admin_id = await _member_id(client, owner, "admin-")
    # a viewer changes nothing; an admin does not touch owners
    refused = await client.patch(
        f"/members/{admin_id}", headers=bearer(viewer), json={"role": "owner"}
    )
    assert_error(refused, 403, "view_only_member")
    assert_error(
        await client.patch(f"/members/{viewer_id}", headers=bearer(admin), json={"role": "owner"}),
        403, "validation_error",
    )  # fmt: skip
    assert_error(
        await client.delete(f"/members/{owner_id}", headers=bearer(admin)), 403, "validation_error"
    )
    # the last owner keeps the role and stays
    assert_error(
        await client.patch(f"/members/{owner_id}", headers=bearer(owner), json={"role": "admin"}),
        422, "validation_error",
    )  # fmt: skip
    assert_error(
        await client.delete(f"/members/{owner_id}", headers=bearer(owner)), 422, "validation_error"
    )
    # an admin promotes the viewer to admin; the new role holds at once
    promoted = await client.patch(
        f"/members/{viewer_id}", headers=bearer(admin), json={"role": "admin"}
    )
    assert promoted.status_code == 200 and promoted.json()["role"] == "admin"
    created = await client.post("/api-keys", headers=bearer(viewer), json={"name": "now admin"})
    assert created.status_code == 201, created.text
    # removed: their session ends now
    removed = await client.delete(f"/members/{viewer_id}", headers=bearer(owner))
    assert removed.json() == {"object": "member", "id": viewer_id, "deleted": True}
    assert (await client.get("/members", headers=bearer(viewer))).status_code in (401, 403)
    other = await tenants.member(await tenants.create(), Role.OWNER)
    assert_error(
        await client.delete(f"/members/{admin_id}", headers=bearer(other)), 404, "not_found"
    )
    bad = await client.patch(f"/members/{admin_id}", headers=bearer(owner), json={"role": "root"})
    assert_error(bad, 422, "validation_error")
