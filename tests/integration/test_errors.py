"""Spec §2.1 and §7: every non-2xx answer is the envelope, whatever went wrong."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from mailbridge.services.accounts._teams import Role
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error


async def test_unknown_route_is_404_not_found(client: httpx.AsyncClient, tenant: Tenant) -> None:
    assert_error(await client.get("/no-such-thing", headers=tenant.headers), 404, "not_found")


async def test_wrong_method_is_405_in_the_envelope(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    response = await client.put("/logs", headers=tenant.headers)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET"
    deleting = await client.delete("/domains", headers=tenant.headers)
    assert_error(deleting, 405, "method_not_allowed")
    assert set(deleting.headers["allow"].split(", ")) == {"GET", "POST"}


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PATCH", "/emails/batch", "POST"),  # not PATCH /emails/{email_id}
        ("GET", "/emails/batch", "POST"),
        ("DELETE", "/emails/receiving", "GET"),
        ("PATCH", "/domains/claim", "POST"),
        ("GET", "/contacts/batch", "POST"),
        ("GET", "/events/send", "POST"),
        # a literal last segment beside a parameter: not DELETE .../threads/{thread_id}
        ("DELETE", "/inboxes/help@shop.io/threads/search", "GET"),
        ("PATCH", "/inboxes/0191d0c8-7c1a-7bbb-8000-000000000001/threads/search", "GET"),
    ],
)
async def test_a_literal_path_is_not_taken_for_an_id(
    client: httpx.AsyncClient, tenant: Tenant, method: str, path: str, allow: str
) -> None:
    response = await client.request(method, path, headers=tenant.headers, json={"name": "x"})
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == allow


async def test_malformed_json_is_422_validation_error(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    response = await client.post(
        "/api-keys",
        content=b'{"name": ',
        headers={**bearer(admin), "content-type": "application/json"},
    )
    assert_error(response, 422, "validation_error")


async def test_missing_field_is_named(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    response = await client.post(
        "/api-keys", headers=bearer(admin), json={"permission": "full_access"}
    )
    assert_error(response, 422, "missing_required_field")
    assert "`name`" in response.json()["message"]
    empty = await client.post("/api-keys", headers=bearer(admin))
    assert_error(empty, 422, "missing_required_field")


async def test_other_body_errors_are_validation_error(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    for body in ({"name": "x", "permission": "root"}, {"name": ""}, {"name": 12}, ["x"]):
        response = await client.post("/api-keys", headers=bearer(admin), json=body)
        assert_error(response, 422, "validation_error")


async def test_extra_fields_are_ignored_and_get_accepts_an_empty_body(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    admin = await tenants.member(tenant, Role.ADMIN)
    response = await client.post(
        "/api-keys", headers=bearer(admin), json={"name": "x", "colour": "blue"}
    )
    assert response.status_code == 201
    listed = await client.request("GET", "/api-keys", headers=tenant.headers, json={})
    assert listed.status_code == 200
    assert "statusCode" not in listed.json()


@pytest.fixture
async def failing_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret-internal-detail at /srv/mailbridge/db.py")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://t", headers={"User-Agent": "t"}
    ) as http:
        yield http


async def test_unhandled_exception_is_500_application_error_without_internals(
    failing_client: httpx.AsyncClient, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    response = await failing_client.get("/boom", headers=tenant.headers)
    assert_error(response, 500, "application_error")
    assert "secret-internal-detail" not in response.text
    assert "Traceback" not in response.text
    assert any("secret-internal-detail" in r.getMessage() or r.exc_info for r in caplog.records)
    logs = (await failing_client.get("/logs", headers=tenant.headers)).json()["data"]
    assert logs[-1]["endpoint"] == "/boom" and logs[-1]["response_status"] == 500
