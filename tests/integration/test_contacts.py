"""Contacts under an audience and under ``/contacts``: writes, lookups, filters, events."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import func, select

from mailbridge.clock import isoformat_ms
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ActivityEvent, Contact, Segment, SegmentMember
from tests.integration.conftest import Tenant, Tenants
from tests.integration.test_audiences import create_audience
from tests.integration.test_auth import assert_error


async def add_contact(
    client: httpx.AsyncClient, tenant: Tenant, audience_id: str | None = None, **body: Any
) -> str:
    path = f"/audiences/{audience_id}/contacts" if audience_id else "/contacts"
    response = await client.post(path, json=body, headers=tenant.headers)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["object"] == "contact" and set(created) == {"object", "id"}
    return str(created["id"])


async def events_of(context: ServiceContext, team_id: str, kind: str) -> list[dict[str, Any]]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(ActivityEvent)
            .where(ActivityEvent.team_id == team_id, ActivityEvent.type == kind)
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return [row.data for row in rows]


async def count_contacts(context: ServiceContext, team_id: str) -> int:
    async with context.database.session() as session:
        counted = await session.scalar(
            select(func.count()).select_from(Contact).where(Contact.team_id == team_id)
        )
    return int(counted or 0)


def emails(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["email"] for item in response.json()["data"]]


async def test_create_and_get_by_id_and_by_email(client: httpx.AsyncClient, tenant: Tenant) -> None:
    audience_id = await create_audience(client, tenant)
    contact_id = await add_contact(
        client, tenant, audience_id, email="  Ann.Lee+News@Mail.NET ", first_name="Ann",
        last_name="Lee", unsubscribed=True,
    )  # fmt: skip
    by_id = await client.get(
        f"/audiences/{audience_id}/contacts/{contact_id}", headers=tenant.headers
    )
    assert by_id.status_code == 200
    body = by_id.json()
    assert body == {
        "object": "contact",
        "id": contact_id,
        "audience_id": audience_id,
        "email": "ann.lee+news@mail.net",
        "first_name": "Ann",
        "last_name": "Lee",
        "unsubscribed": True,
        "properties": {},
        "created_at": body["created_at"],
        "updated_at": body["created_at"],
    }
    by_email = await client.get(
        f"/audiences/{audience_id}/contacts/{quote('ANN.LEE+news@mail.net', safe='')}",
        headers=tenant.headers,
    )
    assert by_email.json() == body
    # An id names the contact in any audience of the team.
    assert (await client.get(f"/contacts/{contact_id}", headers=tenant.headers)).json() == body


async def test_contacts_route_uses_the_named_or_the_default_audience(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    news = await create_audience(client, tenant, "news")
    in_default = await add_contact(client, tenant, email="a@mail.net")
    in_body = await add_contact(client, tenant, email="a@mail.net", audience_id=news)
    assert in_default != in_body
    default_id = (await client.get(f"/contacts/{in_default}", headers=tenant.headers)).json()[
        "audience_id"
    ]
    assert default_id != news
    # By email: the default audience unless audience_id says otherwise.
    plain = await client.get("/contacts/a@mail.net", headers=tenant.headers)
    assert plain.json()["id"] == in_default
    named = await client.get(
        "/contacts/a@mail.net", params={"audience_id": news}, headers=tenant.headers
    )
    assert named.json()["id"] == in_body
    via_query = await client.post(
        "/contacts", params={"audience_id": news}, json={"email": "q@mail.net"},
        headers=tenant.headers,
    )  # fmt: skip
    assert via_query.status_code == 201
    got = await client.get(f"/contacts/{via_query.json()['id']}", headers=tenant.headers)
    assert got.json()["audience_id"] == news
    # An id with the wrong audience is not found.
    assert_error(
        await client.get(
            f"/contacts/{in_default}", params={"audience_id": news}, headers=tenant.headers
        ),
        404,
        "not_found",
    )
    assert_error(
        await client.get(f"/audiences/{news}/contacts/{in_default}", headers=tenant.headers),
        404,
        "not_found",
    )


async def test_duplicate_email_in_an_audience_is_409_contact_exists(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    audience_id = await create_audience(client, tenant)
    await add_contact(client, tenant, audience_id, email="dup@mail.net")
    again = await client.post(
        f"/audiences/{audience_id}/contacts", json={"email": "DUP@mail.net"}, headers=tenant.headers
    )
    assert_error(again, 409, "contact_exists")
    other = await create_audience(client, tenant, "other")
    await add_contact(client, tenant, other, email="dup@mail.net")
    assert await count_contacts(context, tenant.team_id) == 2
    assert len(await events_of(context, tenant.team_id, "contact.created")) == 2


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({"email": "not-an-address"}, "validation_error"),
        ({"email": "a@b"}, "validation_error"),
        ({"email": "two@@mail.net"}, "validation_error"),
        ({"email": 42}, "validation_error"),
        ({"first_name": "x"}, "missing_required_field"),
        ({"email": "a@mail.net", "first_name": "x" * 201}, "validation_error"),
        ({"email": "a@mail.net", "unsubscribed": "perhaps"}, "validation_error"),
    ],
)
async def test_invalid_bodies_are_422(
    client: httpx.AsyncClient,
    tenant: Tenant,
    context: ServiceContext,
    body: dict[str, Any],
    name: str,
) -> None:
    assert_error(await client.post("/contacts", json=body, headers=tenant.headers), 422, name)
    assert await count_contacts(context, tenant.team_id) == 0


async def test_unknown_or_foreign_ids_are_404(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    theirs = await create_audience(client, other)
    their_contact = await add_contact(client, other, theirs, email="x@mail.net")
    mine = await create_audience(client, tenant)
    for response in [
        await client.get(f"/contacts/{their_contact}", headers=tenant.headers),
        await client.patch(
            f"/contacts/{their_contact}", json={"first_name": "z"}, headers=tenant.headers
        ),
        await client.delete(f"/contacts/{their_contact}", headers=tenant.headers),
        await client.get(f"/audiences/{theirs}/contacts/{their_contact}", headers=tenant.headers),
        await client.get(f"/audiences/{mine}/contacts/{their_contact}", headers=tenant.headers),
        await client.get(f"/audiences/{theirs}/contacts", headers=tenant.headers),
        await client.get("/contacts", params={"audience_id": theirs}, headers=tenant.headers),
        await client.post(
            "/contacts", json={"email": "y@mail.net", "audience_id": theirs},
            headers=tenant.headers,
        ),
        await client.get("/contacts/x@mail.net", headers=tenant.headers),
        await client.get("/contacts/nobody@mail.net", headers=tenant.headers),
    ]:  # fmt: skip
        assert_error(response, 404, "not_found")
    untouched = await client.get(f"/contacts/{their_contact}", headers=other.headers)
    assert untouched.json()["first_name"] is None


async def test_update_by_id_and_by_email(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    contact_id = await add_contact(client, tenant, email="eve@mail.net", first_name="Eve")
    patched = await client.patch(
        f"/contacts/{contact_id}", json={"last_name": "Stone", "unsubscribed": True},
        headers=tenant.headers,
    )  # fmt: skip
    assert patched.status_code == 200
    assert patched.json() == {"object": "contact", "id": contact_id}
    # The Resend SDK repeats the email (and the id) in the body.
    by_email = await client.patch(
        "/contacts/Eve%40mail.net",
        json={"email": "eve@mail.net", "id": contact_id, "first_name": None},
        headers=tenant.headers,
    )
    assert by_email.status_code == 200
    got = (await client.get(f"/contacts/{contact_id}", headers=tenant.headers)).json()
    assert (got["first_name"], got["last_name"], got["unsubscribed"]) == (None, "Stone", True)
    assert got["updated_at"] >= got["created_at"]
    # Fields left out (or unsubscribed: null) stay as they are.
    await client.patch(
        f"/contacts/{contact_id}", json={"unsubscribed": None}, headers=tenant.headers
    )
    assert (await client.get(f"/contacts/{contact_id}", headers=tenant.headers)).json()[
        "unsubscribed"
    ] is True
    assert_error(
        await client.patch(
            f"/contacts/{contact_id}", json={"email": "new@mail.net"}, headers=tenant.headers
        ),
        422,
        "validation_error",
    )
    assert len(await events_of(context, tenant.team_id, "contact.updated")) == 2


async def test_update_and_delete_under_an_audience(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    audience_id = await create_audience(client, tenant)
    contact_id = await add_contact(client, tenant, audience_id, email="al@mail.net")
    path = f"/audiences/{audience_id}/contacts/al@mail.net"
    patched = await client.patch(path, json={"first_name": "Al"}, headers=tenant.headers)
    assert patched.json() == {"object": "contact", "id": contact_id}
    assert (await client.get(path, headers=tenant.headers)).json()["first_name"] == "Al"
    removed = await client.delete(path, headers=tenant.headers)
    assert removed.json() == {
        "object": "contact", "id": contact_id, "contact": contact_id, "deleted": True
    }  # fmt: skip
    assert_error(await client.get(path, headers=tenant.headers), 404, "not_found")
    assert_error(await client.delete(path, headers=tenant.headers), 404, "not_found")


async def test_delete_by_email_also_drops_memberships(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    contact_id = await add_contact(client, tenant, email="gone@mail.net")
    kept = await add_contact(client, tenant, email="kept@mail.net")
    async with context.database.session() as session:
        contact = await session.get(Contact, contact_id)
        assert contact is not None
        now = context.clock.now()
        segment = Segment(
            team_id=tenant.team_id, audience_id=contact.audience_id, name="vip", filter={},
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(segment)
        await session.flush()
        session.add_all(
            SegmentMember(segment_id=segment.id, contact_id=member, created_at=now)
            for member in (contact_id, kept)
        )
        await session.commit()
    removed = await client.delete("/contacts/gone%40mail.net", headers=tenant.headers)
    assert removed.status_code == 200, removed.text
    assert removed.json()["deleted"] is True and removed.json()["id"] == contact_id
    async with context.database.session() as session:
        members = (await session.scalars(select(SegmentMember.contact_id))).all()
    assert members == [kept]
    assert_error(
        await client.get(f"/contacts/{contact_id}", headers=tenant.headers), 404, "not_found"
    )


async def test_events_are_recorded_for_every_change(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    audience_id = await create_audience(client, tenant)
    contact_id = await add_contact(
        client, tenant, audience_id, email="ev@mail.net", first_name="Ev"
    )
    path = f"/contacts/{contact_id}"
    await client.patch(path, json={"first_name": "Eva", "last_name": "L"}, headers=tenant.headers)
    # Nothing changes: no event.
    await client.patch(path, json={"first_name": "Eva"}, headers=tenant.headers)
    await client.delete(path, headers=tenant.headers)

    [created] = await events_of(context, tenant.team_id, "contact.created")
    assert created["id"] == contact_id and created["audience_id"] == audience_id
    assert created["email"] == "ev@mail.net" and created["first_name"] == "Ev"
    [updated] = await events_of(context, tenant.team_id, "contact.updated")
    assert updated["id"] == contact_id and updated["email"] == "ev@mail.net"
    assert updated["audience_id"] == audience_id
    assert updated["changes"] == {
        "first_name": {"old": "Ev", "new": "Eva"},
        "last_name": {"old": None, "new": "L"},
    }
    [deleted] = await events_of(context, tenant.team_id, "contact.deleted")
    assert deleted["id"] == contact_id and deleted["email"] == "ev@mail.net"
    assert deleted["audience_id"] == audience_id


async def test_a_refused_write_records_no_event(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    await add_contact(client, tenant, email="one@mail.net")
    await client.post("/contacts", json={"email": "one@mail.net"}, headers=tenant.headers)
    await client.post("/contacts", json={"email": "bad"}, headers=tenant.headers)
    await client.patch(
        "/contacts/one@mail.net", json={"properties": {"nope": 1}}, headers=tenant.headers
    )
    assert len(await events_of(context, tenant.team_id, "contact.created")) == 1
    assert await events_of(context, tenant.team_id, "contact.updated") == []


@pytest.fixture
async def crowd(client: httpx.AsyncClient, tenant: Tenant) -> dict[str, str]:
    """Contacts in two audiences: label -> id, created in this order."""
    news = await create_audience(client, tenant, "news")
    made: dict[str, str] = {}
    for label, audience_id, unsubscribed in [
        ("ann@mail.net", None, False),
        ("bob@corp.io", None, True),
        ("cat@mail.net", news, False),
        ("dan@corp.io", news, True),
        ("ann@corp.io", news, False),
    ]:
        made[label] = await add_contact(
            client, tenant, audience_id, email=label, unsubscribed=unsubscribed
        )
    made["news"] = news
    return made


async def test_list_filters(
    client: httpx.AsyncClient, tenant: Tenant, crowd: dict[str, str]
) -> None:
    async def listed(path: str = "/contacts", **params: str) -> list[str]:
        return emails(await client.get(path, params=params, headers=tenant.headers))

    everyone = ["ann@corp.io", "dan@corp.io", "cat@mail.net", "bob@corp.io", "ann@mail.net"]
    assert await listed() == everyone
    assert await listed(audience_id=crowd["news"]) == everyone[:3]
    assert await listed(f"/audiences/{crowd['news']}/contacts") == everyone[:3]
    assert await listed(email="ANN@mail.net") == ["ann@mail.net"]
    assert await listed(email_contains="CORP") == ["ann@corp.io", "dan@corp.io", "bob@corp.io"]
    assert await listed(email_contains="%") == []
    assert await listed(unsubscribed="true") == ["dan@corp.io", "bob@corp.io"]
    assert await listed(unsubscribed="false", email_contains="ann") == [
        "ann@corp.io",
        "ann@mail.net",
    ]
    assert await listed(f"/audiences/{crowd['news']}/contacts", unsubscribed="false") == [
        "ann@corp.io",
        "cat@mail.net",
    ]
    cat = (await client.get(f"/contacts/{crowd['cat@mail.net']}", headers=tenant.headers)).json()
    assert await listed(created_after=cat["created_at"]) == everyone[:2]
    assert await listed(created_before=cat["created_at"]) == everyone[3:]
    assert await listed(created_after="2000-01-01") == everyone
    assert await listed(created_before="2000-01-01T00:00:00+00:00") == []


@pytest.mark.parametrize(
    "params",
    [{"unsubscribed": "maybe"}, {"created_after": "yesterday"}, {"created_before": "13/13/2020"}],
)
async def test_bad_filters_are_422(
    client: httpx.AsyncClient, tenant: Tenant, params: dict[str, str]
) -> None:
    assert_error(
        await client.get("/contacts", params=params, headers=tenant.headers),
        422,
        "validation_error",
    )


async def test_lists_are_paginated(
    client: httpx.AsyncClient, tenant: Tenant, crowd: dict[str, str]
) -> None:
    seen: list[str] = []
    params: dict[str, str | int] = {"limit": 2}
    pages = 0
    while True:
        body = (await client.get("/contacts", params=params, headers=tenant.headers)).json()
        pages += 1
        assert len(body["data"]) <= 2
        seen += [item["id"] for item in body["data"]]
        if not body["has_more"]:
            break
        params["after"] = body["data"][-1]["id"]
    assert pages == 3 and len(seen) == len(set(seen)) == 5
    back = await client.get(
        f"/audiences/{crowd['news']}/contacts",
        params={"before": crowd["cat@mail.net"], "limit": 1},
        headers=tenant.headers,
    )
    assert [item["id"] for item in back.json()["data"]] == [crowd["dan@corp.io"]]
    assert back.json()["has_more"] is True
    # A cursor outside the list (another audience's contact) is a 422.
    assert_error(
        await client.get(
            f"/audiences/{crowd['news']}/contacts",
            params={"after": crowd["ann@mail.net"]},
            headers=tenant.headers,
        ),
        422,
        "validation_error",
    )


async def test_created_at_bounds_are_exclusive(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    contact_id = await add_contact(client, tenant, email="t@mail.net")
    async with context.database.session() as session:
        contact = await session.get(Contact, contact_id)
        assert contact is not None
        created = contact.created_at
    just_before = isoformat_ms(created - timedelta(seconds=1))
    assert just_before is not None
    assert emails(
        await client.get("/contacts", params={"created_after": just_before}, headers=tenant.headers)
    ) == ["t@mail.net"]
    assert (
        emails(
            await client.get(
                "/contacts",
                params={"created_before": just_before},
                headers=tenant.headers,
            )
        )
        == []
    )


async def test_create_with_topics_and_segments(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants, context: ServiceContext
) -> None:
    topic = await client.post(
        "/topics", json={"name": "Product news", "default_subscription": "opt_in"},
        headers=tenant.headers,
    )  # fmt: skip
    topic_id = topic.json()["id"]
    seed = await add_contact(client, tenant, email="seed@mail.net")
    async with context.database.session() as session:
        contact = await session.get(Contact, seed)
        assert contact is not None
        now = context.clock.now()
        segment = Segment(
            team_id=tenant.team_id, audience_id=contact.audience_id, name="s", filter={},
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(segment)
        await session.commit()
        segment_id = segment.id
    contact_id = await add_contact(
        client, tenant, email="joined@mail.net",
        topics=[{"id": topic_id, "subscription": "opt_out"}], segments=[{"id": segment_id}],
    )  # fmt: skip
    chosen = (await client.get(f"/contacts/{contact_id}/topics", headers=tenant.headers)).json()
    assert [(t["id"], t["subscription"]) for t in chosen["data"]] == [(topic_id, "opt_out")]
    async with context.database.session() as session:
        members = (await session.scalars(select(SegmentMember.contact_id))).all()
    assert members == [contact_id]

    other = await tenants.create()
    foreign_topic = await client.post(
        "/topics", json={"name": "theirs", "default_subscription": "opt_in"}, headers=other.headers
    )
    for extra in [
        {"topics": [{"id": foreign_topic.json()["id"], "subscription": "opt_in"}]},
        {"segments": [{"id": "5d9b3f9e-5c1e-4a55-9a53-2a3c1d0f0001"}]},
    ]:
        response = await client.post(
            "/contacts", json={"email": "never@mail.net", **extra}, headers=tenant.headers
        )
        assert_error(response, 404, "not_found")
    bad_choice = await client.post(
        "/contacts",
        json={"email": "never@mail.net", "topics": [{"id": topic_id, "subscription": "maybe"}]},
        headers=tenant.headers,
    )
    assert_error(bad_choice, 422, "validation_error")
    assert_error(
        await client.get("/contacts/never@mail.net", headers=tenant.headers), 404, "not_found"
    )
