"""Custom event definitions over HTTP (spec §6.3): named by id or name, flat schemas,
built-in names refused."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from mailbridge.services.accounts._teams import Role
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error

pytestmark = pytest.mark.integration

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


async def define(client: httpx.AsyncClient, tenant: Tenant, **body: Any) -> httpx.Response:
    return await client.post("/events", json=body, headers=tenant.headers)


async def test_create_then_read_by_id_and_by_name(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    response = await define(
        client, tenant, name="user.created", description="A sign-up",
        schema={"plan": "string", "seats": "number", "trial": "boolean", "ends": "date"},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    created = response.json()
    assert created == {
        "object": "event",
        "id": created["id"],
        "name": "user.created",
        "description": "A sign-up",
        "schema": {"plan": "string", "seats": "number", "trial": "boolean", "ends": "date"},
        "created_at": created["created_at"],
        "updated_at": created["created_at"],
    }
    assert TIMESTAMP.fullmatch(created["created_at"])
    for ref in (created["id"], "user.created"):
        response = await client.get(f"/events/{ref}", headers=tenant.headers)
        assert response.status_code == 200 and response.json() == created
    response = await client.request("GET", "/events/user.created", json={}, headers=tenant.headers)
    assert response.status_code == 200
    minimal = await define(client, tenant, name="welcome")
    assert minimal.status_code == 201
    assert (minimal.json()["description"], minimal.json()["schema"]) == (None, None)


async def test_list_is_paginated_newest_first(client: httpx.AsyncClient, tenant: Tenant) -> None:
    for name in ("a.one", "b.two", "c.three"):
        assert (await define(client, tenant, name=name)).status_code == 201
    response = await client.get("/events?limit=2", headers=tenant.headers)
    page = response.json()
    assert page["object"] == "list" and page["has_more"] is True
    assert [item["name"] for item in page["data"]] == ["c.three", "b.two"]
    response = await client.get(f"/events?after={page['data'][1]['id']}", headers=tenant.headers)
    assert [item["name"] for item in response.json()["data"]] == ["a.one"]
    assert_error(
        await client.get("/events?before=x", headers=tenant.headers), 422, "validation_error"
    )


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({}, "missing_required_field"),
        ({"name": ""}, "validation_error"),
        ({"name": "x" * 201}, "validation_error"),
        ({"name": "user created"}, "validation_error"),
        ({"name": "tab\there"}, "validation_error"),
        ({"name": 12}, "validation_error"),
        ({"name": str(uuid.uuid4())}, "validation_error"),
        ({"name": "email.sent"}, "validation_error"),
        ({"name": "Contact.created"}, "validation_error"),
        ({"name": "domain.updated"}, "validation_error"),
        ({"name": "automation.run.started"}, "validation_error"),
        ({"name": "ok", "schema": ["plan"]}, "validation_error"),
        ({"name": "ok", "schema": {"plan": "text"}}, "validation_error"),
        ({"name": "ok", "schema": {"plan": {"type": "string"}}}, "validation_error"),
        ({"name": "ok", "schema": {"has space": "string"}}, "validation_error"),
        ({"name": "ok", "schema": {f"f{n}": "string" for n in range(101)}}, "validation_error"),
        ({"name": "ok", "description": 5}, "validation_error"),
        ({"name": "ok", "description": "d" * 1001}, "validation_error"),
    ],
)
async def test_bad_definitions_are_refused(
    client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any], name: str
) -> None:
    assert_error(await define(client, tenant, **body), 422, name)
    assert (await client.get("/events", headers=tenant.headers)).json()["data"] == []


async def test_a_name_is_unique_per_team(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    assert (await define(client, tenant, name="order.paid")).status_code == 201
    response = await define(client, tenant, name="order.paid", schema={"total": "number"})
    assert_error(response, 422, "validation_error")
    assert "order.paid" in response.json()["message"]
    other = await tenants.create()
    assert (await define(client, other, name="order.paid")).status_code == 201


async def test_patch_changes_description_and_schema_not_the_name(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    created = (await define(client, tenant, name="order.paid", schema={"total": "number"})).json()
    response = await client.patch(
        "/events/order.paid",
        json={"description": "Paid", "schema": {"total": "number", "coupon": "string"}},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["schema"] == {"total": "number", "coupon": "string"}
    assert response.json()["description"] == "Paid" and response.json()["id"] == created["id"]
    response = await client.patch(
        f"/events/{created['id']}", json={"schema": None, "name": "order.paid"},
        headers=tenant.headers,
    )  # fmt: skip
    assert response.status_code == 200 and response.json()["schema"] is None
    assert response.json()["description"] == "Paid"
    response = await client.patch("/events/order.paid", json={"schema": {}}, headers=tenant.headers)
    assert response.json()["schema"] is None  # an empty schema is no schema
    bodies: list[dict[str, Any]] = [
        {"name": "order.done"}, {"schema": {"total": "money"}}, {"description": []},
    ]  # fmt: skip
    for body in bodies:
        response = await client.patch("/events/order.paid", json=body, headers=tenant.headers)
        assert_error(response, 422, "validation_error")
    assert (await client.get("/events/order.paid", headers=tenant.headers)).status_code == 200


async def test_delete_by_name_or_id(client: httpx.AsyncClient, tenant: Tenant) -> None:
    first = (await define(client, tenant, name="one")).json()
    second = (await define(client, tenant, name="two")).json()
    response = await client.request("DELETE", "/events/one", json={}, headers=tenant.headers)
    assert response.status_code == 200
    assert response.json() == {"object": "event", "id": first["id"], "deleted": True}
    response = await client.delete(f"/events/{second['id']}", headers=tenant.headers)
    assert response.json() == {"object": "event", "id": second["id"], "deleted": True}
    assert_error(await client.get("/events/one", headers=tenant.headers), 404, "not_found")
    # the name is free again
    assert (await define(client, tenant, name="one")).status_code == 201


async def test_unknown_and_foreign_definitions_are_not_found(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    created = (await define(client, tenant, name="mine")).json()
    other = await tenants.create()
    for ref, headers in [
        ("mine", other.headers),
        (created["id"], other.headers),
        (str(uuid.uuid4()), tenant.headers),
        ("nothing.here", tenant.headers),
    ]:
        assert_error(await client.get(f"/events/{ref}", headers=headers), 404, "not_found")
        response = await client.patch(f"/events/{ref}", json={"description": "x"}, headers=headers)
        assert_error(response, 404, "not_found")
        assert_error(await client.delete(f"/events/{ref}", headers=headers), 404, "not_found")


async def test_view_only_members_read_only(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    await define(client, tenant, name="mine")
    viewer = bearer(await tenants.member(tenant, Role.VIEW_ONLY))
    assert (await client.get("/events/mine", headers=viewer)).status_code == 200
    response = await client.post("/events", json={"name": "theirs"}, headers=viewer)
    assert_error(response, 403, "view_only_member")
    assert_error(await client.delete("/events/mine", headers=viewer), 403, "view_only_member")
