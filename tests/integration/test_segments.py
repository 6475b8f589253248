"""Segments (spec §2.3, §4.9): the API rules, and membership resolved by the database."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import (
    Audience,
    Contact,
    ContactEngagement,
    ContactProperty,
    Domain,
)
from tests.integration.conftest import Tenant
from tests.integration.test_auth import assert_error

CAMPAIGN = str(uuid.uuid4())


@dataclass
class Book:
    """One team's audience with registered properties and named contacts."""

    audience_id: str
    other_audience_id: str
    contacts: dict[str, str]  # label -> contact id


PEOPLE: dict[str, dict[str, Any]] = {
    "ann": {
        "email": "ann@shop.io",
        "properties": {"plan": "pro", "age": 34, "vip": True, "joined": "2025-03-01"},
    },
    "bob": {
        "email": "bob@shop.io",
        "properties": {"plan": "free", "age": 19, "vip": False, "joined": "2026-01-15"},
    },
    "cat": {"email": "cat@mail.net", "properties": {"age": 52}, "unsubscribed": True},
    "dan": {"email": "dan_x@shop.io", "properties": {"plan": "pro-trial", "age": 34}},
    "eve": {"email": "eve@other.org", "properties": {}},
}


async def make_book(context: ServiceContext, team_id: str) -> Book:
    now = context.clock.now()
    async with context.database.session() as session:
        audience = Audience(team_id=team_id, name="Main", created_at=now)
        other = Audience(team_id=team_id, name="Other", created_at=now)
        session.add_all([audience, other])
        for key, kind, fallback in [
            ("plan", "string", "free"), ("age", "number", None),
            ("vip", "boolean", None), ("joined", "date", None),
        ]:  # fmt: skip
            session.add(
                ContactProperty(
                    team_id=team_id,
                    key=key,
                    type=kind,
                    fallback_value=fallback,
                    created_at=now,
                    updated_at=now,
                )
            )
        await session.flush()
        contacts: dict[str, str] = {}
        for label, person in PEOPLE.items():
            contact = Contact(
                team_id=team_id,
                audience_id=audience.id,
                email=person["email"],
                first_name=label.title(),
                unsubscribed=person.get("unsubscribed", False),
                properties=person["properties"],
                created_at=now,
                updated_at=now,
            )
            session.add(contact)
            await session.flush()
            contacts[label] = contact.id
        stranger = Contact(
            team_id=team_id,
            audience_id=other.id,
            email="ann@shop.io",
            properties={"plan": "pro"},
            created_at=now,
            updated_at=now,
        )
        session.add(stranger)
        session.add(
            ContactEngagement(
                contact_id=contacts["ann"],
                campaign_id=CAMPAIGN,
                kind="opened",
                team_id=team_id,
                first_at=now,
            )
        )
        session.add(
            Domain(
                team_id=team_id,
                name="shop.io",
                status="verified",
                dkim_selector="s",
                dkim_private_key="k",
                dkim_public_key="p",
                record_status={},
                created_at=now,
                updated_at=now,
            )
        )
        await session.commit()
        return Book(audience.id, other.id, contacts)


@pytest.fixture
async def book(context: ServiceContext, tenant: Tenant) -> Book:
    return await make_book(context, tenant.team_id)


async def create(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, **body: Any
) -> httpx.Response:
    body.setdefault("name", "a segment")
    body.setdefault("audience_id", book.audience_id)
    return await client.post("/segments", headers=tenant.headers, json=body)


async def members(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, segment_id: str
) -> set[str]:
    labels = {v: k for k, v in book.contacts.items()}
    found: set[str] = set()
    after: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": 2}
        if after:
            params["after"] = after
        page = await client.get(
            f"/segments/{segment_id}/contacts", headers=tenant.headers, params=params
        )
        assert page.status_code == 200, page.text
        body = page.json()
        found |= {labels.get(item["id"], item["id"]) for item in body["data"]}
        if not body["has_more"]:
            return found
        after = body["data"][-1]["id"]


async def matching(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, **segment_filter: Any
) -> set[str]:
    created = await create(client, tenant, book, filter=segment_filter)
    assert created.status_code == 201, created.text
    return await members(client, tenant, book, created.json()["id"])


async def test_create_get_list_delete(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    created = await create(
        client,
        tenant,
        book,
        name="Pros",
        domain="shop.io",
        filter={"status": "subscribed", "email_contains": "SHOP"},
    )
    assert created.status_code == 201, created.text
    segment = created.json()
    assert segment["object"] == "segment" and segment["name"] == "Pros"
    assert segment["audience_id"] == book.audience_id and segment["domain"] == "shop.io"
    assert segment["filter"] == {
        "status": "subscribed",
        "email_contains": "SHOP",
        "property_filters": None,
        "engagement": None,
    }
    fetched = await client.get(f"/segments/{segment['id']}", headers=tenant.headers)
    assert fetched.json() == segment
    listed = (await client.get("/segments", headers=tenant.headers)).json()
    assert [s["id"] for s in listed["data"]] == [segment["id"]]
    deleted = await client.delete(f"/segments/{segment['id']}", headers=tenant.headers)
    assert deleted.json() == {"object": "segment", "id": segment["id"], "deleted": True}
    assert_error(
        await client.get(f"/segments/{segment['id']}", headers=tenant.headers), 404, "not_found"
    )


@pytest.mark.parametrize(
    "body",
    [
        {"filter": {"status": "everyone"}},
        {"filter": {"property_filters": [{"key": "shoe_size", "operator": "eq", "value": 4}]}},
        {"filter": {"property_filters": [{"key": "age", "operator": "like", "value": 4}]}},
        {"filter": {"property_filters": [{"key": "age", "operator": "contains", "value": "4"}]}},
        {"filter": {"property_filters": [{"key": "age", "operator": "gt", "value": "old"}]}},
        {"filter": {"property_filters": [{"key": "plan", "operator": "in", "value": []}]}},
        {"filter": {"engagement": {"event": "opened"}}},
        {"filter": {"engagement": {"event": "forwarded", "campaign_id": CAMPAIGN}}},
        {"filter": {"engagement": {"event": "opened", "campaign_id": "nope"}}},
        {"domain": "not-ours.io"},
        {"name": ""},
    ],
)
async def test_invalid_segments_are_422(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, body: dict[str, Any]
) -> None:
    response = await create(client, tenant, book, **body)
    assert response.status_code == 422, response.text
    assert response.json()["name"] in {"validation_error", "missing_required_field"}


async def test_unknown_or_foreign_audience_is_404(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, tenants: Any
) -> None:
    other = await tenants.create()
    other_book = await make_book(tenants.context, other.team_id)
    response = await create(client, tenant, book, audience_id=other_book.audience_id)
    assert_error(response, 404, "not_found")


async def test_patch_follows_spec_4_9(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    segment = (
        await create(
            client,
            tenant,
            book,
            filter={
                "status": "subscribed",
                "email_contains": "shop",
                "property_filters": [{"key": "plan", "operator": "eq", "value": "pro"}],
                "engagement": {"event": "opened", "campaign_id": CAMPAIGN},
            },
        )
    ).json()
    path = f"/segments/{segment['id']}"
    renamed = (await client.patch(path, headers=tenant.headers, json={"name": "New"})).json()
    assert renamed["name"] == "New" and renamed["filter"] == segment["filter"]
    cleared = (
        await client.patch(
            path,
            headers=tenant.headers,
            json={
                "filter": {
                    "email_contains": None,
                    "property_filters": [],
                    "engagement": None,
                }
            },
        )
    ).json()
    assert cleared["filter"] == {
        "status": "subscribed",
        "email_contains": None,
        "property_filters": None,
        "engagement": None,
    }
    assert cleared["updated_at"] >= segment["updated_at"]
    status = (
        await client.patch(
            path, headers=tenant.headers, json={"filter": {"status": "members_only"}}
        )
    ).json()
    assert status["filter"]["status"] == "members_only"
    for body in (
        {"audience_id": book.other_audience_id},
        {"domain": "shop.io"},
        {"filter": {"status": "nobody"}},
        {"filter": {"property_filters": [{"key": "ghost", "operator": "exists"}]}},
        {"filter": {"engagement": {"event": "clicked"}}},
    ):
        assert_error(
            await client.patch(path, headers=tenant.headers, json=body), 422, "validation_error"
        )
    after = (await client.get(path, headers=tenant.headers)).json()
    assert after["filter"]["status"] == "members_only"  # the refused patches changed nothing
    foreign = f"/segments/{uuid.uuid4()}"
    assert_error(
        await client.patch(foreign, headers=tenant.headers, json={"name": "x"}), 404, "not_found"
    )


async def test_status_filters(client: httpx.AsyncClient, tenant: Tenant, book: Book) -> None:
    everyone = {"ann", "bob", "cat", "dan", "eve"}
    assert await matching(client, tenant, book, status="all") == everyone
    assert await matching(client, tenant, book, status="subscribed") == everyone - {"cat"}
    assert await matching(client, tenant, book, status="unsubscribed") == {"cat"}
    assert await matching(client, tenant, book, status="members_only") == set()


async def test_email_contains_is_case_insensitive_and_literal(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    assert await matching(client, tenant, book, email_contains="@SHOP.io") == {"ann", "bob", "dan"}
    assert await matching(client, tenant, book, email_contains="_x") == {"dan"}  # _ is no wildcard
    assert await matching(client, tenant, book, email_contains="%") == set()


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"key": "plan", "operator": "eq", "value": "pro"}, {"ann"}),
        ({"key": "plan", "operator": "eq", "value": "free"}, {"bob", "cat", "eve"}),  # fallback
        ({"key": "plan", "operator": "neq", "value": "free"}, {"ann", "dan"}),
        ({"key": "plan", "operator": "contains", "value": "pro"}, {"ann", "dan"}),
        ({"key": "plan", "operator": "not_contains", "value": "pro"}, {"bob", "cat", "eve"}),
        ({"key": "plan", "operator": "starts_with", "value": "pro-"}, {"dan"}),
        ({"key": "plan", "operator": "ends_with", "value": "ree"}, {"bob", "cat", "eve"}),
        ({"key": "plan", "operator": "in", "value": ["pro", "pro-trial"]}, {"ann", "dan"}),
        ({"key": "plan", "operator": "exists"}, {"ann", "bob", "dan"}),
        ({"key": "plan", "operator": "not_exists"}, {"cat", "eve"}),
        ({"key": "age", "operator": "eq", "value": 34}, {"ann", "dan"}),
        ({"key": "age", "operator": "neq", "value": 34}, {"bob", "cat", "eve"}),
        ({"key": "age", "operator": "gt", "value": 34}, {"cat"}),
        ({"key": "age", "operator": "gte", "value": 34}, {"ann", "cat", "dan"}),
        ({"key": "age", "operator": "lt", "value": 34}, {"bob"}),
        ({"key": "age", "operator": "lte", "value": 34.0}, {"ann", "bob", "dan"}),
        ({"key": "age", "operator": "in", "value": [19, 52]}, {"bob", "cat"}),
        ({"key": "vip", "operator": "eq", "value": True}, {"ann"}),
        ({"key": "vip", "operator": "eq", "value": False}, {"bob"}),
        ({"key": "vip", "operator": "neq", "value": True}, {"bob", "cat", "dan", "eve"}),
        ({"key": "joined", "operator": "gte", "value": "2026-01-01"}, {"bob"}),
        ({"key": "joined", "operator": "lt", "value": "2026-01-01"}, {"ann"}),
    ],
)
async def test_property_filters(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, rule: dict[str, Any], expected: set[str]
) -> None:
    assert await matching(client, tenant, book, property_filters=[rule]) == expected


async def test_filters_combine_with_and(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    found = await matching(
        client,
        tenant,
        book,
        status="subscribed",
        email_contains="shop",
        property_filters=[
            {"key": "age", "operator": "gte", "value": 30},
            {"key": "plan", "operator": "starts_with", "value": "pro"},
        ],
    )
    assert found == {"ann", "dan"}


async def test_engagement(client: httpx.AsyncClient, tenant: Tenant, book: Book) -> None:
    opened = {"event": "opened", "campaign_id": CAMPAIGN}
    assert await matching(client, tenant, book, engagement=opened) == {"ann"}
    not_opened = {"event": "not_opened", "campaign_id": CAMPAIGN}
    assert await matching(client, tenant, book, engagement=not_opened) == {
        "bob",
        "cat",
        "dan",
        "eve",
    }
    clicked = {"event": "clicked", "campaign_id": CAMPAIGN}
    assert await matching(client, tenant, book, engagement=clicked) == set()


async def test_explicit_members(client: httpx.AsyncClient, tenant: Tenant, book: Book) -> None:
    segment = (await create(client, tenant, book, filter={"status": "members_only"})).json()
    sid = segment["id"]
    added = await client.post(
        f"/segments/{sid}/contacts/{book.contacts['bob']}", headers=tenant.headers
    )
    assert added.status_code == 200, added.text
    assert added.json()["contact_id"] == book.contacts["bob"]
    by_email = await client.post(f"/contacts/cat@mail.net/segments/{sid}", headers=tenant.headers)
    assert by_email.status_code == 200, by_email.text
    assert await members(client, tenant, book, sid) == {"bob", "cat"}
    mine = (
        await client.get(f"/contacts/{book.contacts['bob']}/segments", headers=tenant.headers)
    ).json()
    assert [s["id"] for s in mine["data"]] == [sid]
    removed = await client.delete(
        f"/segments/{sid}/contacts/{book.contacts['bob']}", headers=tenant.headers
    )
    # The ids Resend's SDK types name (`audienceId` as its Node SDK spells it).
    assert removed.json() == {
        "object": "contact_segment",
        "id": sid,
        "segment_id": sid,
        "contact_id": book.contacts["bob"],
        "audience_id": segment["audience_id"],
        "audienceId": segment["audience_id"],
        "deleted": True,
    }
    assert await members(client, tenant, book, sid) == {"cat"}
    again = await client.delete(
        f"/segments/{sid}/contacts/{book.contacts['bob']}", headers=tenant.headers
    )
    assert_error(again, 404, "not_found")
    assert_error(
        await client.post(f"/segments/{sid}/contacts/{uuid.uuid4()}", headers=tenant.headers),
        404,
        "not_found",
    )


async def test_explicit_members_join_the_filter(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    segment = (
        await create(
            client,
            tenant,
            book,
            filter={"property_filters": [{"key": "plan", "operator": "eq", "value": "pro"}]},
        )
    ).json()
    await client.post(
        f"/segments/{segment['id']}/contacts/{book.contacts['eve']}", headers=tenant.headers
    )
    assert await members(client, tenant, book, segment["id"]) == {"ann", "eve"}


async def test_a_segment_made_with_a_name_alone_holds_only_the_contacts_added_to_it(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    """As Resend's SDKs make one (``segments.create({name})``): a broadcast to it must not
    reach the whole audience."""
    made = await create(client, tenant, book, name="VIP")  # no filter
    assert made.status_code == 201, made.text
    segment = (await client.get(f"/segments/{made.json()['id']}", headers=tenant.headers)).json()
    assert segment["filter"]["status"] == "members_only"
    assert await members(client, tenant, book, segment["id"]) == set()
    added = await client.post(
        f"/segments/{segment['id']}/contacts/{book.contacts['ann']}", headers=tenant.headers
    )
    assert added.status_code in (200, 201), added.text
    assert await members(client, tenant, book, segment["id"]) == {"ann"}


async def test_contacts_of_another_audience_never_match(
    client: httpx.AsyncClient, tenant: Tenant, book: Book
) -> None:
    other = (
        await create(
            client, tenant, book, audience_id=book.other_audience_id, filter={"status": "all"}
        )
    ).json()
    found = await members(client, tenant, book, other["id"])
    assert len(found) == 1 and not found & set(book.contacts)
    refused = await client.post(
        f"/segments/{other['id']}/contacts/{book.contacts['ann']}", headers=tenant.headers
    )
    assert_error(refused, 422, "validation_error")


async def test_view_only_member_cannot_write(
    client: httpx.AsyncClient, tenant: Tenant, book: Book, tenants: Any
) -> None:
    from mailbridge.services.accounts._teams import Role

    viewer = await tenants.member(tenant, Role.VIEW_ONLY)
    response = await client.post(
        "/segments",
        headers={"Authorization": f"Bearer {viewer}"},
        json={"name": "x", "audience_id": book.audience_id},
    )
    assert_error(response, 403, "view_only_member")
