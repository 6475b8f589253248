"""Contact properties: their own life, and the check of every contact write against them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mailbridge.services.audiences._properties import registered_properties
from mailbridge.services.kernel import ServiceContext
from tests.integration.conftest import Tenant, Tenants
from tests.integration.test_auth import assert_error
from tests.integration.test_contacts import add_contact


async def register(
    client: httpx.AsyncClient, tenant: Tenant, key: str, kind: str, fallback: Any = None
) -> str:
    body: dict[str, Any] = {"key": key, "type": kind}
    if fallback is not None:
        body["fallback_value"] = fallback
    response = await client.post("/contact-properties", json=body, headers=tenant.headers)
    assert response.status_code == 201, response.text
    assert set(response.json()) == {"object", "id"}
    assert response.json()["object"] == "contact_property"
    return str(response.json()["id"])


@pytest.fixture
async def schema(client: httpx.AsyncClient, tenant: Tenant) -> dict[str, str]:
    """One property of each type: key -> id."""
    return {
        "plan": await register(client, tenant, "plan", "string", "free"),
        "seats": await register(client, tenant, "seats", "number", 1),
        "beta": await register(client, tenant, "beta", "boolean", False),
        "renews_on": await register(client, tenant, "renews_on", "date"),
    }


async def properties_of(client: httpx.AsyncClient, tenant: Tenant, ref: str) -> dict[str, Any]:
    """The contact's property values (as Resend shows them: ``{key: {value, type}}``)."""
    response = await client.get(f"/contacts/{ref}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    shown: dict[str, dict[str, Any]] = response.json()["properties"]
    assert all(set(item) == {"value", "type"} for item in shown.values())
    return {key: item["value"] for key, item in shown.items()}


async def test_create_get_list_update_delete(
    client: httpx.AsyncClient, tenant: Tenant, schema: dict[str, str]
) -> None:
    got = await client.get(f"/contact-properties/{schema['seats']}", headers=tenant.headers)
    body = got.json()
    assert body == {
        "object": "contact_property",
        "id": schema["seats"],
        "key": "seats",
        "type": "number",
        "fallback_value": 1,
        "created_at": body["created_at"],
    }
    listed = await client.get("/contact-properties", params={"limit": 3}, headers=tenant.headers)
    assert [item["key"] for item in listed.json()["data"]] == ["renews_on", "beta", "seats"]
    assert listed.json()["has_more"] is True

    # Only the fallback value changes; key and type may be repeated as they are.
    patched = await client.patch(
        f"/contact-properties/{schema['seats']}",
        json={"fallback_value": 5, "key": "seats", "type": "number"},
        headers=tenant.headers,
    )
    assert patched.json() == {"object": "contact_property", "id": schema["seats"]}
    again = await client.get(f"/contact-properties/{schema['seats']}", headers=tenant.headers)
    assert again.json()["fallback_value"] == 5
    cleared = await client.patch(
        f"/contact-properties/{schema['plan']}", json={"fallback_value": None},
        headers=tenant.headers,
    )  # fmt: skip
    assert cleared.status_code == 200
    plan = await client.get(f"/contact-properties/{schema['plan']}", headers=tenant.headers)
    assert plan.json()["fallback_value"] is None

    removed = await client.delete(f"/contact-properties/{schema['beta']}", headers=tenant.headers)
    assert removed.json() == {"object": "contact_property", "id": schema["beta"], "deleted": True}
    assert_error(
        await client.get(f"/contact-properties/{schema['beta']}", headers=tenant.headers),
        404,
        "not_found",
    )


@pytest.mark.parametrize(
    "body",
    [
        {"key": "has space", "type": "string"},
        {"key": "dash-ed", "type": "string"},
        {"key": "k" * 51, "type": "string"},
        {"key": "", "type": "string"},
        {"key": "email", "type": "string"},
        {"key": "First_Name", "type": "string"},
        {"key": "size", "type": "integer"},
        {"key": "size", "type": "number", "fallback_value": "ten"},
        {"key": "size", "type": "number", "fallback_value": True},
        {"key": "flag", "type": "boolean", "fallback_value": "yes"},
        {"key": "when", "type": "date", "fallback_value": "next week"},
        {"key": "name", "type": "string", "fallback_value": 3},
    ],
)
async def test_invalid_properties_are_422(
    client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]
) -> None:
    response = await client.post("/contact-properties", json=body, headers=tenant.headers)
    assert_error(response, 422, "validation_error")
    assert (await client.get("/contact-properties", headers=tenant.headers)).json()["data"] == []


async def test_missing_fields_and_duplicates(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    assert_error(
        await client.post("/contact-properties", json={"key": "x"}, headers=tenant.headers),
        422,
        "missing_required_field",
    )
    await register(client, tenant, "company", "string")
    duplicate = await client.post(
        "/contact-properties", json={"key": "company", "type": "number"}, headers=tenant.headers
    )
    assert_error(duplicate, 409, "contact_property_exists")
    # Keys are per team.
    other = await tenants.create()
    await register(client, other, "company", "number")


async def test_key_and_type_are_fixed(
    client: httpx.AsyncClient, tenant: Tenant, schema: dict[str, str]
) -> None:
    path = f"/contact-properties/{schema['plan']}"
    for body in [{"key": "tier"}, {"type": "number"}, {"fallback_value": 7}]:
        assert_error(
            await client.patch(path, json=body, headers=tenant.headers), 422, "validation_error"
        )
    got = (await client.get(path, headers=tenant.headers)).json()
    assert (got["key"], got["type"], got["fallback_value"]) == ("plan", "string", "free")


async def test_foreign_property_is_not_found(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    other = await tenants.create()
    theirs = await register(client, other, "plan", "string")
    for response in [
        await client.get(f"/contact-properties/{theirs}", headers=tenant.headers),
        await client.patch(
            f"/contact-properties/{theirs}", json={"fallback_value": "x"}, headers=tenant.headers
        ),
        await client.delete(f"/contact-properties/{theirs}", headers=tenant.headers),
        await client.get("/contact-properties/nope", headers=tenant.headers),
    ]:
        assert_error(response, 404, "not_found")


async def test_contact_values_are_checked_and_normalized(
    client: httpx.AsyncClient, tenant: Tenant, schema: dict[str, str]
) -> None:
    contact_id = await add_contact(
        client,
        tenant,
        email="p@mail.net",
        properties={"plan": "pro", "seats": 3.5, "beta": True, "renews_on": "2026-03-01"},
    )
    assert await properties_of(client, tenant, contact_id) == {
        "plan": "pro",
        "seats": 3.5,
        "beta": True,
        "renews_on": "2026-03-01",
    }
    # Datetimes are stored in UTC with milliseconds; null removes a value; others stay.
    patched = await client.patch(
        f"/contacts/{contact_id}",
        json={"properties": {"renews_on": "2026-03-01T10:00:00+02:00", "beta": None}},
        headers=tenant.headers,
    )
    assert patched.status_code == 200, patched.text
    assert await properties_of(client, tenant, contact_id) == {
        "plan": "pro",
        "seats": 3.5,
        "renews_on": "2026-03-01T08:00:00.000Z",
    }


async def test_contacts_show_each_value_with_its_type(
    client: httpx.AsyncClient, tenant: Tenant, schema: dict[str, str]
) -> None:
    audience = await client.post("/audiences", json={"name": "a"}, headers=tenant.headers)
    audience_id = audience.json()["id"]
    values = {"plan": "2026-01-01", "seats": 2, "beta": False, "renews_on": "2026-01-01"}
    contact_id = await add_contact(
        client, tenant, audience_id, email="t@mail.net", properties=values
    )
    expected = {
        "plan": {"value": "2026-01-01", "type": "string"},
        "seats": {"value": 2, "type": "number"},
        "beta": {"value": False, "type": "boolean"},
        "renews_on": {"value": "2026-01-01", "type": "date"},
    }
    for path in [f"/contacts/{contact_id}", f"/audiences/{audience_id}/contacts/t@mail.net"]:
        assert (await client.get(path, headers=tenant.headers)).json()["properties"] == expected
    for path in ["/contacts", f"/audiences/{audience_id}/contacts"]:
        [item] = (await client.get(path, headers=tenant.headers)).json()["data"]
        assert item["properties"] == expected


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"unknown_key": "x"}, "unknown_key"),
        ({"plan": 3}, "plan"),
        ({"seats": "3"}, "seats"),
        ({"seats": True}, "seats"),
        ({"beta": "true"}, "beta"),
        ({"beta": 1}, "beta"),
        ({"renews_on": "soon"}, "renews_on"),
        ({"renews_on": 20260301}, "renews_on"),
        ({"plan": "x" * 2001}, "plan"),
    ],
)
async def test_bad_contact_values_are_422_naming_the_key(
    client: httpx.AsyncClient,
    tenant: Tenant,
    schema: dict[str, str],
    properties: dict[str, Any],
    named: str,
) -> None:
    contact_id = await add_contact(client, tenant, email="p@mail.net", properties={"plan": "pro"})
    for response in [
        await client.post(
            "/contacts", json={"email": "q@mail.net", "properties": properties},
            headers=tenant.headers,
        ),
        await client.patch(
            f"/contacts/{contact_id}", json={"properties": properties}, headers=tenant.headers
        ),
    ]:  # fmt: skip
        assert_error(response, 422, "validation_error")
        assert named in response.json()["message"]
    assert await properties_of(client, tenant, contact_id) == {"plan": "pro"}
    assert_error(await client.get("/contacts/q@mail.net", headers=tenant.headers), 404, "not_found")


async def test_deleting_a_property_erases_its_values(
    client: httpx.AsyncClient,
    tenant: Tenant,
    tenants: Tenants,
    schema: dict[str, str],
    context: ServiceContext,
) -> None:
    both = await add_contact(
        client, tenant, email="a@mail.net", properties={"plan": "pro", "seats": 2}
    )
    only_seats = await add_contact(client, tenant, email="b@mail.net", properties={"seats": 9})
    other = await tenants.create()
    await register(client, other, "plan", "string")
    theirs = await add_contact(client, other, email="a@mail.net", properties={"plan": "x"})

    removed = await client.delete(f"/contact-properties/{schema['plan']}", headers=tenant.headers)
    assert removed.status_code == 200, removed.text
    assert await properties_of(client, tenant, both) == {"seats": 2}
    assert await properties_of(client, tenant, only_seats) == {"seats": 9}
    assert await properties_of(client, other, theirs) == {"plan": "x"}
    # The key is no longer accepted, and may be registered anew with another type.
    rejected = await client.patch(
        f"/contacts/{both}", json={"properties": {"plan": "pro"}}, headers=tenant.headers
    )
    assert_error(rejected, 422, "validation_error")
    await register(client, tenant, "plan", "number")
    async with context.database.session() as session:
        registry = await registered_properties(session, tenant.team_id)
    assert {key: prop.type for key, prop in registry.items()} == {
        "plan": "number",
        "seats": "number",
        "beta": "boolean",
        "renews_on": "date",
    }
