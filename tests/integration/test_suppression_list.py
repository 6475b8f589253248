"""GET, POST, DELETE /suppressions (Resend's shapes), and who may change the list."""

from __future__ import annotations

from urllib.parse import quote

import httpx

from mailbridge.services.accounts._teams import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.suppressions._suppress import suppress, suppressed_among
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error


async def listed(client: httpx.AsyncClient, tenant: Tenant, **params: str) -> list[str]:
    response = await client.get("/suppressions", params=params, headers=tenant.headers)
    assert response.status_code == 200, response.text
    return [item["email"] for item in response.json()["data"]]


async def test_add_get_list_and_remove(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    created = await client.post(
        "/suppressions", json={"email": "  Ada@Mail.NET "}, headers=tenant.headers
    )
    assert created.status_code == 201, created.text
    entry = created.json()
    assert set(entry) == {"object", "id", "email", "origin", "source_id", "created_at"}
    assert entry["object"] == "suppression" and entry["email"] == "ada@mail.net"
    assert (entry["origin"], entry["source_id"]) == ("manual", None)

    # Adding it again answers the existing entry.
    again = await client.post(
        "/suppressions", json={"email": "ada@mail.net"}, headers=tenant.headers
    )
    assert again.status_code == 200 and again.json()["id"] == entry["id"]

    for name in (entry["id"], "ada@mail.net", quote("ADA@mail.net", safe="")):
        got = await client.get(f"/suppressions/{name}", headers=tenant.headers)
        assert got.status_code == 200 and got.json() == entry

    # The send pipeline sees the list.
    async with context.database.session() as session:
        assert await suppressed_among(
            session, tenant.team_id, ["ADA@mail.net", "bob@mail.net"]
        ) == {"ada@mail.net"}
        await suppress(
            session, context.clock, tenant.team_id, "bob@mail.net", "bounced", entry["id"]
        )
        await session.commit()
    summaries = (await client.get("/suppressions", headers=tenant.headers)).json()
    assert summaries["object"] == "list" and summaries["has_more"] is False
    bob, ada = summaries["data"]
    assert (bob["email"], bob["origin"], bob["source_id"]) == (
        "bob@mail.net",
        "bounce",
        entry["id"],
    )
    assert "object" not in ada and ada["id"] == entry["id"]
    assert await listed(client, tenant, origin="bounce") == ["bob@mail.net"]
    assert await listed(client, tenant, origin="manual") == ["ada@mail.net"]
    assert await listed(client, tenant, origin="complaint") == []
    assert_error(
        await client.get("/suppressions", params={"origin": "nope"}, headers=tenant.headers),
        422, "validation_error",
    )  # fmt: skip
    page = await client.get("/suppressions", params={"limit": 1}, headers=tenant.headers)
    assert page.json()["has_more"] is True and len(page.json()["data"]) == 1

    removed = await client.delete("/suppressions/ada%40mail.net", headers=tenant.headers)
    assert removed.status_code == 200
    assert removed.json() == {"object": "suppression", "id": entry["id"], "deleted": True}
    assert_error(
        await client.get(f"/suppressions/{entry['id']}", headers=tenant.headers), 404, "not_found"
    )
    assert_error(
        await client.delete("/suppressions/ada@mail.net", headers=tenant.headers), 404, "not_found"
    )
    removed_by_id = await client.delete(f"/suppressions/{bob['id']}", headers=tenant.headers)
    assert removed_by_id.json()["deleted"] is True
    assert await listed(client, tenant) == []
    async with context.database.session() as session:
        assert (
            await suppressed_among(session, tenant.team_id, ["ada@mail.net", "bob@mail.net"])
            == set()
        )


async def test_an_origin_may_be_given(client: httpx.AsyncClient, tenant: Tenant) -> None:
    bounce = await client.post(
        "/suppressions", json={"email": "b@mail.net", "origin": "bounce"}, headers=tenant.headers
    )
    complaint = await client.post(
        "/suppressions",
        json={"email": "c@mail.net", "reason": "complained"},
        headers=tenant.headers,
    )
    assert (bounce.json()["origin"], complaint.json()["origin"]) == ("bounce", "complaint")
    assert_error(
        await client.post(
            "/suppressions", json={"email": "d@mail.net", "origin": "spite"}, headers=tenant.headers
        ),
        422, "validation_error",
    )  # fmt: skip


async def test_bad_bodies(client: httpx.AsyncClient, tenant: Tenant) -> None:
    assert_error(
        await client.post("/suppressions", json={}, headers=tenant.headers),
        422,
        "missing_required_field",
    )
    bad = await client.post("/suppressions", json={"email": "no address"}, headers=tenant.headers)
    assert_error(bad, 422, "validation_error")
    assert await listed(client, tenant) == []


async def test_batch_add_and_remove(client: httpx.AsyncClient, tenant: Tenant) -> None:
    added = await client.post(
        "/suppressions/batch/add",
        json={"emails": ["a@mail.net", "A@mail.net", "b@mail.net"]},
        headers=tenant.headers,
    )
    assert added.status_code == 201, added.text
    data = added.json()["data"]
    assert len(data) == 2 and all(item["object"] == "suppression" for item in data)
    assert sorted(await listed(client, tenant)) == ["a@mail.net", "b@mail.net"]
    # One bad address: nothing is added.
    refused = await client.post(
        "/suppressions/batch/add", json={"emails": ["c@mail.net", "nope"]}, headers=tenant.headers
    )
    assert_error(refused, 422, "validation_error")
    assert "c@mail.net" not in await listed(client, tenant)

    removed = await client.post(
        "/suppressions/batch/remove",
        json={"emails": ["a@mail.net", "unknown@mail.net"]},
        headers=tenant.headers,
    )
    assert removed.status_code == 200
    assert removed.json()["data"] == [
        {"object": "suppression", "id": data[0]["id"], "deleted": True}
    ]
    by_id = await client.post(
        "/suppressions/batch/remove", json={"ids": [data[1]["id"]]}, headers=tenant.headers
    )
    assert [item["id"] for item in by_id.json()["data"]] == [data[1]["id"]]
    assert await listed(client, tenant) == []
    both = await client.post(
        "/suppressions/batch/remove", json={"ids": [data[1]["id"]], "emails": ["x@y.z"]},
        headers=tenant.headers,
    )  # fmt: skip
    assert_error(both, 422, "validation_error")


async def test_teams_see_only_their_list(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    other = await tenants.create()
    entry = (
        await client.post("/suppressions", json={"email": "ada@mail.net"}, headers=other.headers)
    ).json()
    assert await listed(client, tenant) == []
    for name in (entry["id"], "ada@mail.net"):
        assert_error(
            await client.get(f"/suppressions/{name}", headers=tenant.headers), 404, "not_found"
        )
        assert_error(
            await client.delete(f"/suppressions/{name}", headers=tenant.headers), 404, "not_found"
        )
    assert await listed(client, other) == ["ada@mail.net"]
    # A cursor of another team's list is refused.
    response = await client.get(
        "/suppressions", params={"after": entry["id"]}, headers=tenant.headers
    )
    assert_error(response, 422, "validation_error")


async def test_view_only_members_read_but_do_not_change(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    entry = (
        await client.post("/suppressions", json={"email": "ada@mail.net"}, headers=tenant.headers)
    ).json()
    viewer = bearer(await tenants.member(tenant, Role.VIEW_ONLY))
    assert (await client.get("/suppressions", headers=viewer)).status_code == 200
    assert (await client.get(f"/suppressions/{entry['id']}", headers=viewer)).status_code == 200
    refused = [
        await client.post("/suppressions", json={"email": "bob@mail.net"}, headers=viewer),
        await client.delete(f"/suppressions/{entry['id']}", headers=viewer),
        await client.post(
            "/suppressions/batch/add", json={"emails": ["c@mail.net"]}, headers=viewer
        ),
        await client.post(
            "/suppressions/batch/remove", json={"ids": [entry["id"]]}, headers=viewer
        ),
    ]
    for response in refused:
        assert_error(response, 403, "view_only_member")
    assert await listed(client, tenant) == ["ada@mail.net"]
