"""Audiences: create, list, get, delete, and the default audience of ``/contacts``."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from sqlalchemy import func, select

from mailbridge.services.accounts._teams import Role
from mailbridge.services.audiences import _audiences as audiences
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Audience, Contact, Segment, SegmentMember
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error


async def create_audience(client: httpx.AsyncClient, tenant: Tenant, name: str = "News") -> str:
    response = await client.post("/audiences", json={"name": name}, headers=tenant.headers)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["object"] == "audience" and body["name"] == name.strip()
    return str(body["id"])


async def test_create_get_and_delete(client: httpx.AsyncClient, tenant: Tenant) -> None:
    audience_id = await create_audience(client, tenant, "  Weekly readers ")
    got = await client.get(f"/audiences/{audience_id}", headers=tenant.headers)
    assert got.status_code == 200
    body = got.json()
    assert body["object"] == "audience" and body["id"] == audience_id
    assert body["name"] == "Weekly readers"
    assert body["created_at"].endswith("Z") and len(body["created_at"]) == 24
    removed = await client.delete(f"/audiences/{audience_id}", headers=tenant.headers)
    assert removed.status_code == 200
    assert removed.json() == {"object": "audience", "id": audience_id, "deleted": True}
    assert_error(
        await client.get(f"/audiences/{audience_id}", headers=tenant.headers), 404, "not_found"
    )
    assert_error(
        await client.delete(f"/audiences/{audience_id}", headers=tenant.headers), 404, "not_found"
    )


async def test_name_is_required_and_bounded(client: httpx.AsyncClient, tenant: Tenant) -> None:
    assert_error(
        await client.post("/audiences", json={}, headers=tenant.headers),
        422,
        "missing_required_field",
    )
    for name in ["", "   ", "x" * 201]:
        assert_error(
            await client.post("/audiences", json={"name": name}, headers=tenant.headers),
            422,
            "validation_error",
        )


async def test_list_is_paginated_newest_first(client: httpx.AsyncClient, tenant: Tenant) -> None:
    ids = [await create_audience(client, tenant, f"list {n}") for n in range(5)]
    first = (await client.get("/audiences", params={"limit": 2}, headers=tenant.headers)).json()
    assert first["object"] == "list" and first["has_more"] is True
    assert [item["id"] for item in first["data"]] == [ids[4], ids[3]]
    rest = await client.get(
        "/audiences", params={"limit": 10, "after": ids[3]}, headers=tenant.headers
    )
    assert [item["id"] for item in rest.json()["data"]] == [ids[2], ids[1], ids[0]]
    assert rest.json()["has_more"] is False
    assert_error(
        await client.get("/audiences", params={"limit": 0}, headers=tenant.headers),
        422,
        "validation_error",
    )


async def test_another_teams_audience_is_not_found(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    theirs = await create_audience(client, other)
    for response in [
        await client.get(f"/audiences/{theirs}", headers=tenant.headers),
        await client.delete(f"/audiences/{theirs}", headers=tenant.headers),
        await client.get(f"/audiences/{uuid.uuid4()}", headers=tenant.headers),
        await client.get("/audiences/not-a-uuid", headers=tenant.headers),
        await client.post(
            f"/audiences/{theirs}/contacts", json={"email": "a@mail.net"}, headers=tenant.headers
        ),
    ]:
        assert_error(response, 404, "not_found")
    listed = (await client.get("/audiences", headers=tenant.headers)).json()
    assert listed["data"] == []
    assert (await client.get(f"/audiences/{theirs}", headers=other.headers)).status_code == 200


async def test_view_only_member_reads_but_cannot_write(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    audience_id = await create_audience(client, tenant)
    viewer = bearer(await tenants.member(tenant, Role.VIEW_ONLY))
    assert (await client.get(f"/audiences/{audience_id}", headers=viewer)).status_code == 200
    assert_error(
        await client.post("/audiences", json={"name": "x"}, headers=viewer),
        403,
        "view_only_member",
    )
    assert_error(
        await client.delete(f"/audiences/{audience_id}", headers=viewer), 403, "view_only_member"
    )


async def test_deleting_an_audience_deletes_its_contacts_and_segments(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    doomed = await create_audience(client, tenant, "doomed")
    kept = await create_audience(client, tenant, "kept")
    for audience_id in (doomed, kept):
        for n in range(3):
            response = await client.post(
                f"/audiences/{audience_id}/contacts",
                json={"email": f"p{n}@mail.net"},
                headers=tenant.headers,
            )
            assert response.status_code == 201
    async with context.database.session() as session:
        contact_id = await session.scalar(select(Contact.id).where(Contact.audience_id == doomed))
        now = context.clock.now()
        segment = Segment(
            team_id=tenant.team_id, audience_id=doomed, name="s", filter={},
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(segment)
        await session.flush()
        session.add(SegmentMember(segment_id=segment.id, contact_id=contact_id, created_at=now))
        await session.commit()
    removed = await client.delete(f"/audiences/{doomed}", headers=tenant.headers)
    assert removed.status_code == 200, removed.text
    async with context.database.session() as session:
        left = await session.execute(
            select(Contact.audience_id, func.count()).group_by(Contact.audience_id)
        )
        assert dict(left.tuples().all()) == {kept: 3}
        assert await session.scalar(select(func.count()).select_from(Segment)) == 0
        assert await session.scalar(select(func.count()).select_from(SegmentMember)) == 0


async def test_default_audience_is_made_once_on_first_need(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    assert (await client.get("/audiences", headers=tenant.headers)).json()["data"] == []
    # Reading does not create it.
    assert (await client.get("/contacts", headers=tenant.headers)).json()["data"] == []
    assert (await client.get("/audiences", headers=tenant.headers)).json()["data"] == []
    for email in ("a@mail.net", "b@mail.net"):
        response = await client.post("/contacts", json={"email": email}, headers=tenant.headers)
        assert response.status_code == 201
    listed = (await client.get("/audiences", headers=tenant.headers)).json()["data"]
    assert [item["name"] for item in listed] == ["General"]
    default_id = listed[0]["id"]
    contacts = (await client.get("/contacts", headers=tenant.headers)).json()["data"]
    assert {item["audience_id"] for item in contacts} == {default_id}

    # Deleted, it comes back empty on next need.
    assert (await client.delete(f"/audiences/{default_id}", headers=tenant.headers)).is_success
    assert (await client.get("/contacts", headers=tenant.headers)).json()["data"] == []
    again = await client.post("/contacts", json={"email": "a@mail.net"}, headers=tenant.headers)
    assert again.status_code == 201
    listed = (await client.get("/audiences", headers=tenant.headers)).json()["data"]
    assert [item["name"] for item in listed] == ["General"]


async def test_concurrent_first_needs_make_one_default_audience(
    tenants: Tenants, context: ServiceContext
) -> None:
    tenant = await tenants.create()

    async def need() -> str:
        async with context.database.session() as session:
            audience = await audiences.default_audience(session, context.clock, tenant.team_id)
            return audience.id

    ids = await asyncio.gather(*(need() for _ in range(4)))
    assert len(set(ids)) == 1
    async with context.database.session() as session:
        rows = (
            await session.scalars(select(Audience).where(Audience.team_id == tenant.team_id))
        ).all()
    assert [(row.name, row.is_default) for row in rows] == [("General", True)]


async def test_default_audiences_are_per_team(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    for who in (tenant, other):
        response = await client.post("/contacts", json={"email": "a@mail.net"}, headers=who.headers)
        assert response.status_code == 201
    mine = (await client.get("/audiences", headers=tenant.headers)).json()["data"]
    theirs = (await client.get("/audiences", headers=other.headers)).json()["data"]
    assert len(mine) == len(theirs) == 1 and mine[0]["id"] != theirs[0]["id"]
