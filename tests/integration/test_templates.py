"""Templates over HTTP: CRUD by id or alias, drafts and publishing, duplicates, validation."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from mailbridge.errors import NotFound, ValidationError
from mailbridge.mail.templating import Variable
from mailbridge.services.accounts._teams import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.templates import _templates as templates
from mailbridge.storage.tables import ActivityEvent, TemplateVersion
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")

WELCOME: dict[str, Any] = {
    "name": "Welcome",
    "alias": "welcome",
    "from": "Acme <hello@acme.io>",
    "subject": "Welcome, {{{FIRST_NAME|friend}}}",
    "reply_to": "support@acme.io",
    "html": "<p>Your plan: {{{PLAN}}} ({{{SEATS}}} seats) {{{contact.company}}}</p>",
    "text": "Your plan: {{{PLAN}}}",
    "variables": [
        {"key": "PLAN", "type": "string", "fallback_value": "free"},
        {"key": "SEATS", "type": "number"},
    ],
}


async def create(client: httpx.AsyncClient, tenant: Tenant, **fields: Any) -> str:
    body = {**WELCOME, **fields}
    response = await client.post("/templates", headers=tenant.headers, json=body)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created == {"id": created["id"], "object": "template"}
    return str(created["id"])


async def fetch(client: httpx.AsyncClient, tenant: Tenant, ref: str) -> dict[str, Any]:
    response = await client.get(f"/templates/{ref}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def published(
    context: ServiceContext, tenant: Tenant, ref: str
) -> templates.PublishedTemplate:
    async with context.database.session() as session:
        return await templates.published_template(session, tenant.team_id, ref)


async def test_create_then_get_by_id_and_by_alias(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    template_id = await create(client, tenant)
    body = await fetch(client, tenant, template_id)
    assert body == {
        "object": "template",
        "id": template_id,
        "current_version_id": body["current_version_id"],
        "alias": "welcome",
        "name": "Welcome",
        "status": "draft",
        "published_at": None,
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
        "from": "Acme <hello@acme.io>",
        "subject": "Welcome, {{{FIRST_NAME|friend}}}",
        "reply_to": ["support@acme.io"],
        "html": WELCOME["html"],
        "text": WELCOME["text"],
        "variables": [
            {"key": "PLAN", "type": "string", "fallback_value": "free"},
            {"key": "SEATS", "type": "number", "fallback_value": None},
        ],
        "has_unpublished_versions": True,
    }
    assert TIMESTAMP.fullmatch(body["created_at"]) and TIMESTAMP.fullmatch(body["updated_at"])
    assert uuid.UUID(body["current_version_id"])
    assert await fetch(client, tenant, "welcome") == body


async def test_only_name_and_html_are_required(client: httpx.AsyncClient, tenant: Tenant) -> None:
    response = await client.post(
        "/templates", headers=tenant.headers, json={"name": "Bare", "html": "<p>hi</p>"}
    )
    assert response.status_code == 201
    body = await fetch(client, tenant, response.json()["id"])
    assert body["alias"] is None and body["from"] is None and body["subject"] is None
    assert body["reply_to"] is None and body["text"] is None and body["variables"] == []
    for missing in ("name", "html"):
        fields = {"name": "Bare", "html": "<p>hi</p>"}
        del fields[missing]
        refused = await client.post("/templates", headers=tenant.headers, json=fields)
        assert_error(refused, 422, "missing_required_field")
        assert f"`{missing}`" in refused.json()["message"]


async def test_list_is_paginated_newest_first(client: httpx.AsyncClient, tenant: Tenant) -> None:
    ids = [await create(client, tenant, name=f"T{i}", alias=f"t-{i}") for i in range(5)]
    first = (await client.get("/templates?limit=2", headers=tenant.headers)).json()
    assert first["object"] == "list" and first["has_more"] is True
    assert [item["id"] for item in first["data"]] == [ids[4], ids[3]]
    assert first["data"][0] == {
        "id": ids[4],
        "name": "T4",
        "alias": "t-4",
        "status": "draft",
        "published_at": None,
        "created_at": first["data"][0]["created_at"],
        "updated_at": first["data"][0]["updated_at"],
    }
    rest = (await client.get(f"/templates?limit=10&after={ids[3]}", headers=tenant.headers)).json()
    assert [item["id"] for item in rest["data"]] == [ids[2], ids[1], ids[0]]
    assert rest["has_more"] is False
    before = (await client.get(f"/templates?before={ids[0]}", headers=tenant.headers)).json()
    assert [item["id"] for item in before["data"]] == ids[:0:-1]
    bad = await client.get(f"/templates?after={uuid.uuid4()}", headers=tenant.headers)
    assert_error(bad, 422, "validation_error")


async def test_patch_by_alias_changes_only_what_it_names(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    template_id = await create(client, tenant)
    before = await fetch(client, tenant, template_id)
    response = await client.patch(
        "/templates/welcome",
        headers=tenant.headers,
        json={"subject": "Hello", "text": None, "reply_to": ["a@acme.io", "b@acme.io"]},
    )
    assert response.status_code == 200
    assert response.json() == {"id": template_id, "object": "template"}
    after = await fetch(client, tenant, template_id)
    assert after["subject"] == "Hello" and after["text"] is None
    assert after["reply_to"] == ["a@acme.io", "b@acme.io"]
    assert after["html"] == before["html"] and after["variables"] == before["variables"]
    # Editing a draft edits it in place: still one version.
    assert after["current_version_id"] == before["current_version_id"]


async def test_patch_can_rename_clear_and_move_the_alias(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    template_id = await create(client, tenant)
    renamed = await client.patch(
        f"/templates/{template_id}", headers=tenant.headers, json={"alias": "hello", "name": "Hi"}
    )
    assert renamed.status_code == 200
    assert (await fetch(client, tenant, "hello"))["name"] == "Hi"
    assert_error(await client.get("/templates/welcome", headers=tenant.headers), 404, "not_found")
    cleared = await client.patch("/templates/hello", headers=tenant.headers, json={"alias": None})
    assert cleared.status_code == 200
    assert (await fetch(client, tenant, template_id))["alias"] is None
    # The freed alias can be taken by another template.
    await create(client, tenant, alias="hello")


async def test_delete_by_id_and_by_alias(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    first = await create(client, tenant)
    second = await create(client, tenant, alias="second")
    await client.post(f"/templates/{first}/publish", headers=tenant.headers)
    removed = await client.delete(f"/templates/{first}", headers=tenant.headers)
    assert removed.json() == {"object": "template", "id": first, "deleted": True}
    by_alias = await client.delete("/templates/second", headers=tenant.headers)
    assert by_alias.json() == {"object": "template", "id": second, "deleted": True}
    for ref in (first, second, "welcome", "second"):
        assert_error(
            await client.get(f"/templates/{ref}", headers=tenant.headers), 404, "not_found"
        )
    assert_error(
        await client.delete(f"/templates/{first}", headers=tenant.headers), 404, "not_found"
    )
    async with context.database.session() as session:
        versions = await session.scalar(select(func.count()).select_from(TemplateVersion))
    assert versions == 0
    listed = (await client.get("/templates", headers=tenant.headers)).json()
    assert listed["data"] == []


async def test_publish_then_edit_makes_a_new_draft_and_sending_keeps_the_published(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    template_id = await create(client, tenant)
    with pytest.raises(ValidationError, match="not published"):
        await published(context, tenant, template_id)

    response = await client.post(f"/templates/{template_id}/publish", headers=tenant.headers)
    assert response.status_code == 200
    assert response.json() == {"id": template_id, "object": "template"}
    live = await fetch(client, tenant, template_id)
    assert live["status"] == "published" and live["has_unpublished_versions"] is False
    assert TIMESTAMP.fullmatch(live["published_at"])
    first = await published(context, tenant, "welcome")
    assert first.template_id == template_id and first.version_id == live["current_version_id"]
    assert first.html == WELCOME["html"] and first.from_address == "Acme <hello@acme.io>"
    assert first.reply_to == ("support@acme.io",) and first.alias == "welcome"
    assert first.variables == (Variable("PLAN", "string", "free"), Variable("SEATS", "number"))

    edit = {"html": "<p>New {{{PLAN}}}</p>", "subject": "New"}
    await client.patch(f"/templates/{template_id}", headers=tenant.headers, json=edit)
    draft = await fetch(client, tenant, template_id)
    assert draft["status"] == "draft" and draft["has_unpublished_versions"] is True
    assert draft["html"] == "<p>New {{{PLAN}}}</p>" and draft["subject"] == "New"
    assert draft["published_at"] == live["published_at"]
    assert draft["current_version_id"] != live["current_version_id"]
    assert (await published(context, tenant, template_id)) == first

    # A second edit changes the same draft, not yet another version.
    await client.patch(f"/templates/{template_id}", headers=tenant.headers, json={"text": "t"})
    again = await fetch(client, tenant, template_id)
    assert again["current_version_id"] == draft["current_version_id"] and again["text"] == "t"
    listed = (await client.get("/templates", headers=tenant.headers)).json()["data"][0]
    assert listed["status"] == "draft" and listed["published_at"] == live["published_at"]

    await client.post(f"/templates/{template_id}/publish", headers=tenant.headers)
    second = await published(context, tenant, template_id)
    assert second.version_id == draft["current_version_id"]
    assert second.html == "<p>New {{{PLAN}}}</p>" and second.subject == "New"
    assert second.text == "t"
    republished = await fetch(client, tenant, template_id)
    assert republished["status"] == "published" and republished["html"] == second.html

    async with context.database.session() as session:
        numbers = (
            await session.scalars(
                select(TemplateVersion.number)
                .where(TemplateVersion.template_id == template_id)
                .order_by(TemplateVersion.number)
            )
        ).all()
        events = (
            await session.scalars(
                select(ActivityEvent.type)
                .where(ActivityEvent.team_id == tenant.team_id)
                .order_by(ActivityEvent.created_at, ActivityEvent.id)
            )
        ).all()
    assert list(numbers) == [1, 2]
    assert list(events) == [
        "template.created",
        "template.published",
        "template.updated",
        "template.updated",
        "template.published",
    ]


async def test_publishing_without_a_draft_changes_nothing(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    template_id = await create(client, tenant)
    await client.post(f"/templates/{template_id}/publish", headers=tenant.headers)
    before = await fetch(client, tenant, template_id)
    again = await client.post("/templates/welcome/publish", headers=tenant.headers)
    assert again.status_code == 200 and again.json() == {"id": template_id, "object": "template"}
    assert await fetch(client, tenant, template_id) == before


async def test_an_alias_only_change_to_a_published_template_makes_no_draft(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    template_id = await create(client, tenant)
    await client.post(f"/templates/{template_id}/publish", headers=tenant.headers)
    await client.patch(f"/templates/{template_id}", headers=tenant.headers, json={"alias": "w2"})
    body = await fetch(client, tenant, "w2")
    assert body["status"] == "published" and body["has_unpublished_versions"] is False


async def test_duplicate_copies_the_current_content_as_a_new_draft(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    template_id = await create(client, tenant)
    await client.post(f"/templates/{template_id}/publish", headers=tenant.headers)
    await client.patch("/templates/welcome", headers=tenant.headers, json={"subject": "Draft"})
    response = await client.post("/templates/welcome/duplicate", headers=tenant.headers)
    assert response.status_code == 201
    copy_id = response.json()["id"]
    assert response.json() == {"id": copy_id, "object": "template"} and copy_id != template_id
    copy = await fetch(client, tenant, copy_id)
    source = await fetch(client, tenant, template_id)
    assert copy["name"] == "Welcome (copy)" and copy["alias"] is None
    assert copy["status"] == "draft" and copy["published_at"] is None
    assert copy["subject"] == "Draft"
    for field in ("from", "reply_to", "html", "text", "variables"):
        assert copy[field] == source[field]
    listed = (await client.get("/templates", headers=tenant.headers)).json()["data"]
    assert [item["id"] for item in listed] == [copy_id, template_id]


async def test_undeclared_variables_are_named(client: httpx.AsyncClient, tenant: Tenant) -> None:
    body = {
        "name": "Bad",
        "subject": "{{{ORDER}}}",
        "html": "<p>{{{PLAN}}} {{{FIRST_NAME}}} {{{contact.plan}}} {{{UNSUBSCRIBE_URL}}}</p>",
        "text": "{{{TOTAL|0}}} {{{EMAIL}}} {{{LAST_NAME}}} {{not_a_variable}}",
        "variables": [{"key": "PLAN", "type": "string"}],
    }
    response = await client.post("/templates", headers=tenant.headers, json=body)
    assert_error(response, 422, "validation_error")
    message = response.json()["message"]
    assert "`ORDER`" in message and "`TOTAL`" in message
    assert "`PLAN`" not in message and "not_a_variable" not in message

    template_id = await create(client, tenant)
    # Removing a declaration the content still uses is refused, and nothing changes.
    refused = await client.patch(
        f"/templates/{template_id}", headers=tenant.headers, json={"variables": []}
    )
    assert_error(refused, 422, "validation_error")
    assert "`PLAN`" in refused.json()["message"] and "`SEATS`" in refused.json()["message"]
    adding = await client.patch(
        f"/templates/{template_id}", headers=tenant.headers, json={"html": "{{{NEW_ONE}}}"}
    )
    assert_error(adding, 422, "validation_error")
    assert "`NEW_ONE`" in adding.json()["message"]
    assert (await fetch(client, tenant, template_id))["html"] == WELCOME["html"]


@pytest.mark.parametrize(
    ("variables", "fragment"),
    [
        ([{"key": f"K{i}", "type": "string"} for i in range(51)], "at most 50"),
        ([{"key": "bad key", "type": "string"}], "`bad key`"),
        ([{"key": "FIRST_NAME", "type": "string"}], "reserved"),
        ([{"key": "A", "type": "string"}, {"key": "A", "type": "number"}], "more than once"),
        ([{"key": "A", "type": "date"}], "string or number"),
        ([{"key": "A", "type": "number", "fallback_value": "ten"}], "must be a number"),
        ([{"key": "A", "type": "string", "fallback_value": 10}], "must be a string"),
    ],
)
async def test_bad_variable_declarations(
    client: httpx.AsyncClient, tenant: Tenant, variables: list[dict[str, Any]], fragment: str
) -> None:
    body = {"name": "T", "html": "<p>hi</p>", "variables": variables}
    response = await client.post("/templates", headers=tenant.headers, json=body)
    assert_error(response, 422, "validation_error")
    assert fragment in response.json()["message"]


async def test_fifty_variables_are_allowed(client: httpx.AsyncClient, tenant: Tenant) -> None:
    variables = [{"key": f"K{i}", "type": "number", "fallback_value": i} for i in range(48)]
    variables += WELCOME["variables"]
    template_id = await create(client, tenant, variables=variables, alias=None)
    assert len((await fetch(client, tenant, template_id))["variables"]) == 50


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"alias": "has space"}, "validation_error"),
        ({"alias": str(uuid.uuid4())}, "validation_error"),
        ({"alias": "a" * 101}, "validation_error"),
        ({"name": "   "}, "validation_error"),
        ({"name": 12}, "validation_error"),
        ({"html": "  "}, "validation_error"),
        ({"from": "not an address"}, "invalid_from_address"),
        ({"reply_to": ["ok@acme.io", "nope"]}, "validation_error"),
        ({"variables": "PLAN"}, "validation_error"),
    ],
)
async def test_bad_fields(
    client: httpx.AsyncClient, tenant: Tenant, fields: dict[str, Any], name: str
) -> None:
    response = await client.post("/templates", headers=tenant.headers, json={**WELCOME, **fields})
    assert_error(response, 422, name)


async def test_a_duplicate_alias_is_refused(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    await create(client, tenant)
    taken = await client.post("/templates", headers=tenant.headers, json=WELCOME)
    assert_error(taken, 422, "validation_error")
    assert "`welcome`" in taken.json()["message"]
    other_id = await create(client, tenant, alias="other")
    moved = await client.patch(
        f"/templates/{other_id}", headers=tenant.headers, json={"alias": "welcome"}
    )
    assert_error(moved, 422, "validation_error")
    # Keeping one's own alias is no conflict; another team may use the same alias.
    same = await client.patch("/templates/other", headers=tenant.headers, json={"alias": "other"})
    assert same.status_code == 200
    await create(client, await tenants.create())


async def test_patch_refuses_null_name_or_html(client: httpx.AsyncClient, tenant: Tenant) -> None:
    template_id = await create(client, tenant)
    for field in ("name", "html"):
        response = await client.patch(
            f"/templates/{template_id}", headers=tenant.headers, json={field: None}
        )
        assert_error(response, 422, "validation_error")


async def test_another_teams_template_is_not_found(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants, context: ServiceContext
) -> None:
    template_id = await create(client, tenant)
    stranger = await tenants.create()
    for ref in (template_id, "welcome", str(uuid.uuid4()), "not-a-uuid"):
        calls = [
            client.get(f"/templates/{ref}", headers=stranger.headers),
            client.patch(f"/templates/{ref}", headers=stranger.headers, json={"name": "x"}),
            client.post(f"/templates/{ref}/publish", headers=stranger.headers),
            client.post(f"/templates/{ref}/duplicate", headers=stranger.headers),
            client.delete(f"/templates/{ref}", headers=stranger.headers),
        ]
        for call in calls:
            assert_error(await call, 404, "not_found")
    with pytest.raises(NotFound):
        await published(context, stranger, template_id)
    assert (await client.get("/templates", headers=stranger.headers)).json()["data"] == []
    assert (await fetch(client, tenant, template_id))["name"] == "Welcome"


async def test_a_view_only_member_reads_but_cannot_write(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    template_id = await create(client, tenant)
    viewer = bearer(await tenants.member(tenant, Role.VIEW_ONLY))
    assert (await client.get("/templates", headers=viewer)).json()["data"][0]["id"] == template_id
    assert (await client.get("/templates/welcome", headers=viewer)).status_code == 200
    writes = [
        client.post("/templates", headers=viewer, json=WELCOME),
        client.post("/templates", headers=viewer, content=b"not json"),
        client.patch(f"/templates/{template_id}", headers=viewer, json={"name": "x"}),
        client.post(f"/templates/{template_id}/publish", headers=viewer),
        client.post(f"/templates/{template_id}/duplicate", headers=viewer),
        client.delete(f"/templates/{template_id}", headers=viewer),
    ]
    for write in writes:
        assert_error(await write, 403, "view_only_member")
    body = await fetch(client, tenant, template_id)
    assert body["name"] == "Welcome" and body["status"] == "draft"
    assert len((await client.get("/templates", headers=tenant.headers)).json()["data"]) == 1
