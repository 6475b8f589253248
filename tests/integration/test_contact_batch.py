"""``POST /contacts/batch``: create-or-update, all or nothing, under the contact lock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from mailbridge.api.app import create_app
from mailbridge.services.audiences import _contact_lock as contact_lock
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import ActivityEvent, ContactLock
from tests.integration.conftest import USER_AGENT, Tenant
from tests.integration.test_audiences import create_audience
from tests.integration.test_auth import assert_error
from tests.integration.test_contact_properties import register
from tests.integration.test_contacts import add_contact, count_contacts, events_of


def people(count: int, prefix: str = "p", **fields: Any) -> list[dict[str, Any]]:
    return [{"email": f"{prefix}{n}@mail.net", **fields} for n in range(count)]


async def lock_rows(context: ServiceContext) -> int:
    async with context.database.session() as session:
        return int(await session.scalar(select(func.count()).select_from(ContactLock)) or 0)


async def test_creates_then_updates_by_email(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    await register(client, tenant, "plan", "string")
    first = await client.post(
        "/contacts/batch",
        json={"contacts": people(3, first_name="P", properties={"plan": "free"})},
        headers=tenant.headers,
    )
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["object"] == "list" and body["has_more"] is False
    assert [(item["email"], item["action"]) for item in body["data"]] == [
        ("p0@mail.net", "created"), ("p1@mail.net", "created"), ("p2@mail.net", "created")
    ]  # fmt: skip
    ids = {item["email"]: item["id"] for item in body["data"]}

    # A bare array works too; existing emails are updated, unchanged ones say so.
    second = await client.post(
        "/contacts/batch",
        json=[
            {"email": "P0@Mail.net", "last_name": "Zero", "properties": {"plan": "pro"}},
            {"email": "p1@mail.net", "first_name": "P"},
            {"email": "new@mail.net", "unsubscribed": True},
        ],
        headers=tenant.headers,
    )
    assert second.status_code == 200, second.text
    assert [(item["email"], item["action"]) for item in second.json()["data"]] == [
        ("p0@mail.net", "updated"), ("p1@mail.net", "unchanged"), ("new@mail.net", "created")
    ]  # fmt: skip
    assert second.json()["data"][0]["id"] == ids["p0@mail.net"]
    p0 = (await client.get(f"/contacts/{ids['p0@mail.net']}", headers=tenant.headers)).json()
    assert (p0["first_name"], p0["last_name"]) == ("P", "Zero")
    assert p0["properties"] == {"plan": {"value": "pro", "type": "string"}}
    new = (await client.get("/contacts/new@mail.net", headers=tenant.headers)).json()
    assert new["unsubscribed"] is True

    created = await events_of(context, tenant.team_id, "contact.created")
    assert sorted(event["email"] for event in created) == [
        "new@mail.net", "p0@mail.net", "p1@mail.net", "p2@mail.net"
    ]  # fmt: skip
    [updated] = await events_of(context, tenant.team_id, "contact.updated")
    assert updated["id"] == ids["p0@mail.net"]
    assert updated["changes"] == {
        "last_name": {"old": None, "new": "Zero"},
        "properties": {"old": {"plan": "free"}, "new": {"plan": "pro"}},
    }
    assert await lock_rows(context) == 0


async def test_audience_is_named_in_body_or_query(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    news = await create_audience(client, tenant, "news")
    in_body = await client.post(
        "/contacts/batch", json={"audience_id": news, "contacts": people(2)}, headers=tenant.headers
    )
    assert in_body.status_code == 200
    in_query = await client.post(
        "/contacts/batch", params={"audience_id": news}, json=people(1, "q"),
        headers=tenant.headers,
    )  # fmt: skip
    assert in_query.status_code == 200
    listed = await client.get(f"/audiences/{news}/contacts", headers=tenant.headers)
    assert len(listed.json()["data"]) == 3
    assert (await client.get("/contacts/p0@mail.net", headers=tenant.headers)).status_code == 404
    foreign = await client.post(
        "/contacts/batch",
        json={"audience_id": "0190f4a4-5a6f-7000-8000-000000000000", "contacts": people(1)},
        headers=tenant.headers,
    )
    assert_error(foreign, 404, "not_found")


@pytest.mark.parametrize(
    ("bad_item", "named"),
    [
        ({"email": "not-an-email"}, "contacts[3].email"),
        ({"email": "x@mail.net", "properties": {"nope": 1}}, "contacts[3].properties.nope"),
        ({"email": "x@mail.net", "properties": {"plan": 5}}, "contacts[3].properties.plan"),
        ({"email": "P1@mail.net"}, "contacts[3].email"),
    ],
)
async def test_one_invalid_item_writes_nothing(
    client: httpx.AsyncClient,
    tenant: Tenant,
    context: ServiceContext,
    bad_item: dict[str, Any],
    named: str,
) -> None:
    await register(client, tenant, "plan", "string")
    existing = await add_contact(client, tenant, email="p0@mail.net", first_name="Old")
    items = [{"email": "p0@mail.net", "first_name": "New"}, *people(2, "q"), bad_item]
    items[1]["email"] = "p1@mail.net"
    response = await client.post("/contacts/batch", json=items, headers=tenant.headers)
    assert_error(response, 422, "validation_error")
    assert named in response.json()["message"]
    assert await count_contacts(context, tenant.team_id) == 1
    got = (await client.get(f"/contacts/{existing}", headers=tenant.headers)).json()
    assert got["first_name"] == "Old"
    assert await events_of(context, tenant.team_id, "contact.updated") == []
    assert await lock_rows(context) == 0


async def test_item_shape_errors_name_the_index(client: httpx.AsyncClient, tenant: Tenant) -> None:
    missing = await client.post(
        "/contacts/batch", json=[{"email": "a@mail.net"}, {"first_name": "x"}],
        headers=tenant.headers,
    )  # fmt: skip
    assert_error(missing, 422, "missing_required_field")
    assert "contacts[1].email" in missing.json()["message"]
    wrong = await client.post(
        "/contacts/batch", json={"contacts": [{"email": "a@mail.net", "unsubscribed": "?"}]},
        headers=tenant.headers,
    )  # fmt: skip
    assert_error(wrong, 422, "validation_error")
    assert "contacts[0].unsubscribed" in wrong.json()["message"]


@pytest.mark.parametrize("body", [[], {"contacts": []}, people(1001), "contacts", {"x": 1}])
async def test_batch_size_and_shape(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext, body: Any
) -> None:
    response = await client.post("/contacts/batch", json=body, headers=tenant.headers)
    assert response.status_code == 422
    assert response.json()["name"] in {"validation_error", "missing_required_field"}
    assert await count_contacts(context, tenant.team_id) == 0


async def test_a_thousand_contacts_in_one_batch(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    response = await client.post("/contacts/batch", json=people(1000), headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert len(response.json()["data"]) == 1000
    assert await count_contacts(context, tenant.team_id) == 1000
    assert len(await events_of(context, tenant.team_id, "contact.created")) == 1000
    again = await client.post("/contacts/batch", json=people(1000), headers=tenant.headers)
    assert {item["action"] for item in again.json()["data"]} == {"unchanged"}


async def test_every_contact_write_is_busy_while_the_lock_is_held(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    kept = await add_contact(client, tenant, email="kept@mail.net")
    holder = await contact_lock.acquire_contact_lock(
        context.database, context.clock, tenant.team_id, 30
    )
    try:
        refused = [
            await client.post("/contacts/batch", json=people(5), headers=tenant.headers),
            await client.post("/contacts", json={"email": "s@mail.net"}, headers=tenant.headers),
            await client.patch(
                f"/contacts/{kept}", json={"first_name": "X"}, headers=tenant.headers
            ),
            await client.delete(f"/contacts/{kept}", headers=tenant.headers),
        ]
        for response in refused:
            assert_error(response, 503, "contacts_busy")
            assert 1 <= int(response.headers["retry-after"]) <= 5
        with pytest.raises(Exception) as busy:
            await contact_lock.acquire_contact_lock(
                context.database, context.clock, tenant.team_id, 30
            )
        assert getattr(busy.value, "name", None) == "contacts_busy"
        # Reads go on.
        assert (await client.get(f"/contacts/{kept}", headers=tenant.headers)).status_code == 200
    finally:
        await contact_lock.release_contact_lock(context.database, tenant.team_id, holder)
    assert await count_contacts(context, tenant.team_id) == 1
    got = (await client.get(f"/contacts/{kept}", headers=tenant.headers)).json()
    assert got["first_name"] is None
    retried = await client.post("/contacts/batch", json=people(5), headers=tenant.headers)
    assert retried.status_code == 200
    assert await count_contacts(context, tenant.team_id) == 6


async def test_the_lock_is_per_team(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Any, context: ServiceContext
) -> None:
    other = await tenants.create()
    holder = await contact_lock.acquire_contact_lock(
        context.database, context.clock, other.team_id, 30
    )
    try:
        response = await client.post("/contacts/batch", json=people(2), headers=tenant.headers)
        assert response.status_code == 200
    finally:
        await contact_lock.release_contact_lock(context.database, other.team_id, holder)


async def test_concurrent_batches_one_is_busy(
    client: httpx.AsyncClient,
    tenant: Tenant,
    context: ServiceContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first batch holds the lock (paused right after taking it) while the second arrives."""
    taken = asyncio.Event()
    proceed = asyncio.Event()
    original = contact_lock.acquire_contact_lock

    async def acquire_then_pause(database: Database, clock: Any, team_id: str, lease: float) -> str:
        holder = await original(database, clock, team_id, lease)
        if not taken.is_set():
            taken.set()
            await proceed.wait()
        return holder

    monkeypatch.setattr(contact_lock, "acquire_contact_lock", acquire_then_pause)

    async def second_when_first_holds() -> httpx.Response:
        await taken.wait()
        try:
            return await client.post(
                "/contacts/batch", json=people(3, "second"), headers=tenant.headers
            )
        finally:
            proceed.set()

    first, second = await asyncio.gather(
        client.post("/contacts/batch", json=people(3, "first"), headers=tenant.headers),
        second_when_first_holds(),
    )
    assert first.status_code == 200, first.text
    assert_error(second, 503, "contacts_busy")
    assert int(second.headers["retry-after"]) >= 1
    listed = (await client.get("/contacts", headers=tenant.headers)).json()["data"]
    assert sorted(item["email"] for item in listed) == [f"first{n}@mail.net" for n in range(3)]
    assert await lock_rows(context) == 0


async def test_gathered_batches_never_half_write(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    """Unpaused: whichever way they interleave, each batch is wholly written or refused."""
    batches = [people(200, f"b{n}-") for n in range(3)]
    responses = await asyncio.gather(
        *(client.post("/contacts/batch", json=batch, headers=tenant.headers) for batch in batches)
    )
    written = 0
    for response in responses:
        if response.status_code == 503:
            assert_error(response, 503, "contacts_busy")
            assert "retry-after" in response.headers
        else:
            assert response.status_code == 200, response.text
            written += 200
    assert written >= 200
    assert await count_contacts(context, tenant.team_id) == written
    assert await lock_rows(context) == 0


async def test_a_crashed_holders_lease_expires(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    async with context.database.session() as session:
        session.add(
            ContactLock(
                team_id=tenant.team_id,
                holder="crashed",
                expires_at=context.clock.now() + timedelta(minutes=5),
            )
        )
        await session.commit()
    busy = await client.post("/contacts/batch", json=people(2), headers=tenant.headers)
    assert_error(busy, 503, "contacts_busy")
    async with context.database.session() as session:
        lock = await session.get(ContactLock, tenant.team_id)
        assert lock is not None
        lock.expires_at = context.clock.now() - timedelta(seconds=1)
        await session.commit()
    response = await client.post("/contacts/batch", json=people(2), headers=tenant.headers)
    assert response.status_code == 200, response.text
    single = await client.post("/contacts", json={"email": "s@mail.net"}, headers=tenant.headers)
    assert single.status_code == 201
    assert await count_contacts(context, tenant.team_id) == 3
    assert await lock_rows(context) == 0


@pytest.fixture
async def hurried_client(context: ServiceContext) -> AsyncIterator[httpx.AsyncClient]:
    """A second app on the same database whose contact writes may take only a microsecond."""
    hurried = ServiceContext(
        settings=context.settings.model_copy(update={"contacts_write_timeout": 1e-6}),
        database=context.database,
        clock=context.clock,
    )
    application: FastAPI = create_app(context=hurried)
    transport = httpx.ASGITransport(app=application)
    async with (
        application.router.lifespan_context(application),
        httpx.AsyncClient(
            transport=transport,
            base_url="http://mailbridge.test",
            headers={"User-Agent": USER_AGENT},
        ) as http,
    ):
        yield http


async def test_a_write_past_its_time_bound_is_rolled_back(
    client: httpx.AsyncClient,
    hurried_client: httpx.AsyncClient,
    tenant: Tenant,
    context: ServiceContext,
) -> None:
    existing = await add_contact(client, tenant, email="p0@mail.net", first_name="Old")
    response = await hurried_client.post(
        "/contacts/batch", json=[{**item, "first_name": "New"} for item in people(1000)],
        headers=tenant.headers,
    )  # fmt: skip
    assert_error(response, 503, "contacts_timeout")
    assert int(response.headers["retry-after"]) >= 1
    assert await count_contacts(context, tenant.team_id) == 1
    got = (await client.get(f"/contacts/{existing}", headers=tenant.headers)).json()
    assert got["first_name"] == "Old"
    async with context.database.session() as session:
        events = await session.scalar(
            select(func.count()).select_from(ActivityEvent).where(
                ActivityEvent.team_id == tenant.team_id
            )
        )  # fmt: skip
    assert events == 1
    # The lock was given back: a normal write goes through at once.
    assert await lock_rows(context) == 0
    retried = await client.post("/contacts/batch", json=people(1000), headers=tenant.headers)
    assert retried.status_code == 200, retried.text
    assert await count_contacts(context, tenant.team_id) == 1000


async def test_single_writes_are_time_bound_too(
    hurried_client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    response = await hurried_client.post(
        "/contacts", json={"email": "slow@mail.net"}, headers=tenant.headers
    )
    assert_error(response, 503, "contacts_timeout")
    assert await count_contacts(context, tenant.team_id) == 0
