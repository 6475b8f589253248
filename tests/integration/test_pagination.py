"""Spec §8.3, through GET /api-keys: the one pagination piece every list uses."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.conftest import Tenant, Tenants
from tests.integration.test_auth import assert_error


@pytest.fixture
async def key_ids(tenants: Tenants, tenant: Tenant) -> list[str]:
    """26 keys of the tenant, newest first (as the list orders them)."""
    created = [tenant.key_id]
    for _ in range(25):
        key_id, _token = await tenants.key(tenant)
        created.append(key_id)
    return list(reversed(created))


async def page(client: httpx.AsyncClient, tenant: Tenant, **params: str | int) -> httpx.Response:
    return await client.get("/api-keys", headers=tenant.headers, params=params)


async def test_default_page_is_20_newest_first(
    client: httpx.AsyncClient, tenant: Tenant, key_ids: list[str]
) -> None:
    body = (await page(client, tenant)).json()
    assert body["object"] == "list" and body["has_more"] is True
    assert [item["id"] for item in body["data"]] == key_ids[:20]


async def test_forward_paging_visits_every_item_once(
    client: httpx.AsyncClient, tenant: Tenant, key_ids: list[str]
) -> None:
    seen: list[str] = []
    params: dict[str, str | int] = {"limit": 7}
    while True:
        body = (await page(client, tenant, **params)).json()
        seen += [item["id"] for item in body["data"]]
        if not body["has_more"]:
            break
        params["after"] = body["data"][-1]["id"]
    assert seen == key_ids


async def test_backward_paging_excludes_the_cursor(
    client: httpx.AsyncClient, tenant: Tenant, key_ids: list[str]
) -> None:
    body = (await page(client, tenant, before=key_ids[10], limit=4)).json()
    assert [item["id"] for item in body["data"]] == key_ids[6:10]
    assert body["has_more"] is True
    first = (await page(client, tenant, before=key_ids[3], limit=10)).json()
    assert [item["id"] for item in first["data"]] == key_ids[:3]
    assert first["has_more"] is False
    after = (await page(client, tenant, after=key_ids[24])).json()
    assert [item["id"] for item in after["data"]] == key_ids[25:]
    assert after["has_more"] is False


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "1.5", ""])
async def test_limit_outside_1_to_100_is_422(
    client: httpx.AsyncClient, tenant: Tenant, limit: str
) -> None:
    assert_error(await page(client, tenant, limit=limit), 422, "validation_error")


async def test_limit_bounds_are_accepted(client: httpx.AsyncClient, tenant: Tenant) -> None:
    for limit in (1, 100):
        assert (await page(client, tenant, limit=limit)).status_code == 200


async def test_both_cursors_are_422(
    client: httpx.AsyncClient, tenant: Tenant, key_ids: list[str]
) -> None:
    response = await page(client, tenant, after=key_ids[1], before=key_ids[2])
    assert_error(response, 422, "validation_error")


@pytest.mark.parametrize("cursor", ["nope", "00000000-0000-0000-0000-000000000000"])
async def test_unknown_cursor_is_422(
    client: httpx.AsyncClient, tenant: Tenant, cursor: str
) -> None:
    assert_error(await page(client, tenant, after=cursor), 422, "validation_error")
    assert_error(await page(client, tenant, before=cursor), 422, "validation_error")


async def test_another_teams_id_is_not_a_cursor(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    assert_error(await page(client, tenant, after=other.key_id), 422, "validation_error")
