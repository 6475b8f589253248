"""Topics, and each contact's effective subscription to them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.conftest import Tenant, Tenants
from tests.integration.test_auth import assert_error
from tests.integration.test_contacts import add_contact


async def create_topic(
    client: httpx.AsyncClient, tenant: Tenant, name: str, default: str, **extra: Any
) -> str:
    response = await client.post(
        "/topics", json={"name": name, "default_subscription": default, **extra},
        headers=tenant.headers,
    )  # fmt: skip
    assert response.status_code == 201, response.text
    assert response.json()["object"] == "topic" and set(response.json()) == {"object", "id"}
    return str(response.json()["id"])


async def subscriptions(
    client: httpx.AsyncClient, tenant: Tenant, contact: str, **params: Any
) -> dict[str, str]:
    response = await client.get(
        f"/contacts/{contact}/topics", params=params, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    return {item["id"]: item["subscription"] for item in response.json()["data"]}


async def test_create_get_list_update_delete(client: httpx.AsyncClient, tenant: Tenant) -> None:
    topic_id = await create_topic(
        client, tenant, "Product updates", "opt_in", description="Monthly", visibility="private"
    )
    got = (await client.get(f"/topics/{topic_id}", headers=tenant.headers)).json()
    assert got == {
        "object": "topic",
        "id": topic_id,
        "name": "Product updates",
        "description": "Monthly",
        "default_subscription": "opt_in",
        "visibility": "private",
        "created_at": got["created_at"],
        "updated_at": got["updated_at"],
    }
    second = await create_topic(client, tenant, "Offers", "opt_out")
    listed = (await client.get("/topics", params={"limit": 1}, headers=tenant.headers)).json()
    assert [item["id"] for item in listed["data"]] == [second] and listed["has_more"] is True
    assert (await client.get(f"/topics/{second}", headers=tenant.headers)).json()[
        "visibility"
    ] == "public"

    patched = await client.patch(
        f"/topics/{topic_id}",
        json={"name": "Updates", "description": None, "visibility": "public",
              "default_subscription": "opt_in"},
        headers=tenant.headers,
    )  # fmt: skip
    assert patched.json() == {"object": "topic", "id": topic_id}
    got = (await client.get(f"/topics/{topic_id}", headers=tenant.headers)).json()
    assert (got["name"], got["description"], got["visibility"]) == ("Updates", None, "public")

    removed = await client.delete(f"/topics/{topic_id}", headers=tenant.headers)
    assert removed.json() == {"object": "topic", "id": topic_id, "deleted": True}
    assert_error(await client.get(f"/topics/{topic_id}", headers=tenant.headers), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({"name": "x"}, "missing_required_field"),
        ({"default_subscription": "opt_in"}, "missing_required_field"),
        ({"name": "x", "default_subscription": "sometimes"}, "validation_error"),
        ({"name": "", "default_subscription": "opt_in"}, "validation_error"),
        (
            {"name": "x", "default_subscription": "opt_in", "visibility": "secret"},
            "validation_error",
        ),
    ],
)
async def test_invalid_topics_are_422(
    client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any], name: str
) -> None:
    assert_error(await client.post("/topics", json=body, headers=tenant.headers), 422, name)


async def test_default_subscription_is_fixed(client: httpx.AsyncClient, tenant: Tenant) -> None:
    topic_id = await create_topic(client, tenant, "News", "opt_in")
    for body in [{"default_subscription": "opt_out"}, {"visibility": "hidden"}, {"name": "  "}]:
        response = await client.patch(f"/topics/{topic_id}", json=body, headers=tenant.headers)
        assert_error(response, 422, "validation_error")
    got = (await client.get(f"/topics/{topic_id}", headers=tenant.headers)).json()
    assert (got["name"], got["default_subscription"]) == ("News", "opt_in")


async def test_foreign_topics_are_not_found(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    other = await tenants.create()
    theirs = await create_topic(client, other, "Theirs", "opt_in")
    mine = await add_contact(client, tenant, email="me@mail.net")
    for response in [
        await client.get(f"/topics/{theirs}", headers=tenant.headers),
        await client.patch(f"/topics/{theirs}", json={"name": "x"}, headers=tenant.headers),
        await client.delete(f"/topics/{theirs}", headers=tenant.headers),
        await client.patch(
            f"/contacts/{mine}/topics", json=[{"id": theirs, "subscription": "opt_out"}],
            headers=tenant.headers,
        ),
    ]:  # fmt: skip
        assert_error(response, 404, "not_found")
    assert await subscriptions(client, tenant, mine) == {}


async def test_defaults_apply_until_the_contact_chooses(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    news = await create_topic(client, tenant, "News", "opt_in")
    offers = await create_topic(client, tenant, "Offers", "opt_out")
    events = await create_topic(client, tenant, "Events", "opt_in")
    ann = await add_contact(client, tenant, email="ann@mail.net")
    bob = await add_contact(client, tenant, email="bob@mail.net")
    defaults = {news: "opt_in", offers: "opt_out", events: "opt_in"}
    assert await subscriptions(client, tenant, ann) == defaults

    # The Resend SDK sends a bare array; by email too.
    patched = await client.patch(
        "/contacts/ann@mail.net/topics",
        json=[{"id": news, "subscription": "opt_out"}, {"id": offers, "subscription": "opt_in"}],
        headers=tenant.headers,
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["id"] == ann
    assert await subscriptions(client, tenant, ann) == {
        news: "opt_out", offers: "opt_in", events: "opt_in"
    }  # fmt: skip
    # An object body works too, and only the named topics change.
    wrapped = await client.patch(
        f"/contacts/{ann}/topics",
        json={"topics": [{"id": news, "subscription": "opt_in"}]},
        headers=tenant.headers,
    )
    assert wrapped.status_code == 200
    assert await subscriptions(client, tenant, ann) == {
        news: "opt_in", offers: "opt_in", events: "opt_in"
    }  # fmt: skip
    assert await subscriptions(client, tenant, bob) == defaults

    # Deleting a topic drops it from every contact's list.
    await client.delete(f"/topics/{offers}", headers=tenant.headers)
    assert await subscriptions(client, tenant, ann) == {news: "opt_in", events: "opt_in"}


async def test_contact_topics_list_is_paginated_and_shaped(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    ids = [
        await create_topic(client, tenant, f"T{n}", "opt_in", description=f"d{n}") for n in range(3)
    ]
    contact = await add_contact(client, tenant, email="c@mail.net")
    first = await client.get(
        f"/contacts/{contact}/topics", params={"limit": 2}, headers=tenant.headers
    )
    body = first.json()
    assert body["object"] == "list" and body["has_more"] is True
    assert body["data"][0] == {
        "id": ids[2], "name": "T2", "description": "d2", "subscription": "opt_in"
    }  # fmt: skip
    rest = await subscriptions(client, tenant, contact, after=body["data"][-1]["id"])
    assert list(rest) == [ids[0]]


@pytest.mark.parametrize(
    "body",
    [
        [{"id": "x", "subscription": "maybe"}],
        [{"subscription": "opt_in"}],
        {"topics": "all"},
        "opt_in",
    ],
)
async def test_bad_subscription_bodies_are_422(
    client: httpx.AsyncClient, tenant: Tenant, body: Any
) -> None:
    contact = await add_contact(client, tenant, email="c@mail.net")
    response = await client.patch(f"/contacts/{contact}/topics", json=body, headers=tenant.headers)
    assert response.status_code == 422
    assert response.json()["name"] in {"validation_error", "missing_required_field"}


async def test_a_topic_named_twice_is_422(client: httpx.AsyncClient, tenant: Tenant) -> None:
    topic = await create_topic(client, tenant, "News", "opt_in")
    contact = await add_contact(client, tenant, email="c@mail.net")
    response = await client.patch(
        f"/contacts/{contact}/topics",
        json=[{"id": topic, "subscription": "opt_out"}, {"id": topic, "subscription": "opt_in"}],
        headers=tenant.headers,
    )
    assert_error(response, 422, "validation_error")
    assert await subscriptions(client, tenant, contact) == {topic: "opt_in"}


async def test_unknown_contact_is_404(client: httpx.AsyncClient, tenant: Tenant) -> None:
    topic = await create_topic(client, tenant, "News", "opt_in")
    for response in [
        await client.get("/contacts/nobody@mail.net/topics", headers=tenant.headers),
        await client.patch(
            "/contacts/nobody@mail.net/topics", json=[{"id": topic, "subscription": "opt_in"}],
            headers=tenant.headers,
        ),
    ]:  # fmt: skip
        assert_error(response, 404, "not_found")
