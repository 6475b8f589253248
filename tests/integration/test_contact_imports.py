"""``POST /contacts/imports``: a CSV file checked at upload, written by a runner a chunk at
a time with an error a row, resumable after a crash in the middle of a chunk."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from mailbridge.runner.imports import ImportWorker
from mailbridge.services import audiences
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Contact, ContactImportChunk, ContactTopic, SegmentMember
from tests.integration.conftest import Tenant, Tenants
from tests.integration.test_auth import assert_error
from tests.integration.test_contact_properties import register
from tests.integration.test_contacts import add_contact, count_contacts, events_of
from tests.integration.test_topics import create_topic


async def upload(
    client: httpx.AsyncClient, tenant: Tenant, text: str, **fields: Any
) -> httpx.Response:
    data = {
        name: value if isinstance(value, str) else json.dumps(value)
        for name, value in fields.items()
    }
    return await client.post(
        "/contacts/imports",
        files={"file": ("people.csv", text.encode())},
        data=data,
        headers=tenant.headers,
    )


async def imported(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext, text: str, **fields: Any
) -> dict[str, Any]:
    response = await upload(client, tenant, text, **fields)
    assert response.status_code == 201, response.text
    assert set(response.json()) == {"object", "id"}
    await ImportWorker(context).write_all()
    job = await client.get(f"/contacts/imports/{response.json()['id']}", headers=tenant.headers)
    assert job.status_code == 200, job.text
    return dict(job.json())


async def test_a_file_is_written_with_its_counts_and_an_error_a_row(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    await register(client, tenant, "plan", "string")
    await register(client, tenant, "seats", "number")
    await add_contact(client, tenant, email="old@corp.io", first_name="Old")
    text = (
        "Email,First Name,last-name,unsubscribed,plan,seats\n"
        "ann@corp.io,Ann,Lee,,pro,3\n"
        "OLD@corp.io,Olde,,no,,\n"
        "not an address,Bob,,,,\n"
        "cy@corp.io,Cy,,maybe,,\n"
        "dee@corp.io,Dee,,yes,free,many\n"
        "\n"
        "eve@corp.io,,,,,2.5\n"
    )
    job = await imported(client, tenant, context, text, on_conflict="upsert")
    assert job["object"] == "contact_import" and job["status"] == "completed"
    assert job["completed_at"] is not None
    assert job["counts"] == {"total": 6, "created": 2, "updated": 1, "skipped": 0, "failed": 3}
    failures = {error["row"]: error for error in job["errors"]}
    assert sorted(failures) == [4, 5, 6]  # the file's line numbers
    assert "unsubscribed" in failures[5]["message"] and failures[5]["email"] == "cy@corp.io"
    assert "seats" in failures[6]["message"]
    contacts = {
        item["email"]: item
        for item in (await client.get("/contacts", headers=tenant.headers)).json()["data"]
    }
    assert set(contacts) == {"ann@corp.io", "old@corp.io", "eve@corp.io"}
    assert contacts["ann@corp.io"]["properties"]["seats"]["value"] == 3
    assert contacts["ann@corp.io"]["last_name"] == "Lee"
    assert contacts["eve@corp.io"]["properties"]["seats"]["value"] == 2.5
    assert contacts["old@corp.io"]["first_name"] == "Olde"
    assert len(await events_of(context, tenant.team_id, "contact.created")) == 3  # + add_contact
    assert len(await events_of(context, tenant.team_id, "contact.updated")) == 1

    # The same file again: nothing changes, every good row is skipped.
    again = await imported(client, tenant, context, text, on_conflict="upsert")
    assert again["counts"] == {"total": 6, "created": 0, "updated": 0, "skipped": 3, "failed": 3}


async def test_existing_contacts_are_left_as_they_are_unless_upsert_is_asked(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    await add_contact(client, tenant, email="old@corp.io", first_name="Old")
    job = await imported(client, tenant, context, "email,first_name\nold@corp.io,New\n")
    assert job["counts"]["skipped"] == 1 and job["counts"]["updated"] == 0
    kept = await client.get("/contacts/old@corp.io", headers=tenant.headers)
    assert kept.json()["first_name"] == "Old"


async def test_a_column_map_segments_topics_and_skip(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext
) -> None:
    await register(client, tenant, "vip", "boolean")
    await add_contact(client, tenant, email="kept@corp.io", first_name="Kept")
    segment = await client.post("/segments", json={"name": "Imported"}, headers=tenant.headers)
    assert segment.status_code == 201, segment.text
    topic_id = await create_topic(client, tenant, "News", "opt_in")
    text = "Mail;Given;Important\nkept@corp.io;Changed;true\nnew@corp.io;New;false\n".replace(
        ";", ","
    )
    job = await imported(
        client, tenant, context, text,
        column_map={"email": "Mail", "first_name": "Given",
                    "properties": {"vip": {"column": "Important", "type": "boolean"}}},
        on_conflict="skip",
        segments=[{"id": segment.json()["id"]}],
        topics=[{"id": topic_id, "subscription": "opt_out"}],
    )  # fmt: skip
    assert job["counts"] == {"total": 2, "created": 1, "updated": 0, "skipped": 1, "failed": 0}
    kept = await client.get("/contacts/kept@corp.io", headers=tenant.headers)
    assert kept.json()["first_name"] == "Kept"  # skipped: left as it was
    new = await client.get("/contacts/new@corp.io", headers=tenant.headers)
    assert new.json()["properties"]["vip"]["value"] is False
    async with context.database.session() as session:
        members = await session.scalar(select(func.count()).select_from(SegmentMember))
        [choice] = list(await session.scalars(select(ContactTopic)))
    assert members == 1 and choice.subscription == "opt_out"
    assert choice.contact_id == new.json()["id"]


@pytest.mark.parametrize(
    ("text", "fields", "words"),
    [
        ("name\nann\n", {}, "no email column"),
        ("", {}, "empty"),
        ("email\n", {}, "no rows"),
        ("email,plan\na@b.io,x\n", {}, "not registered"),
        ("email\na@b.io\n", {"column_map": {"email": "Mail"}}, "Mail"),
        ("email\na@b.io\n", {"column_map": "{not json"}, "column_map"),
        ("email\na@b.io\n", {"on_conflict": "merge"}, "on_conflict"),
        ("email\na@b.io\n", {"segments": [{"id": "0190aaaa-0000-7000-8000-000000000000"}]},
         "not found"),
        ("email\na@b.io\n", {"topics": [{"id": "x", "subscription": "maybe"}]}, "topics"),
    ],
)  # fmt: skip
async def test_a_bad_file_or_option_is_refused_and_nothing_is_stored(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext,
    text: str, fields: dict[str, Any], words: str,
) -> None:  # fmt: skip
    response = await upload(client, tenant, text, **fields)
    assert response.status_code in (404, 422), response.text
    assert words.lower() in response.json()["message"].lower()
    listed = await client.get("/contacts/imports", headers=tenant.headers)
    assert listed.json()["data"] == []


async def test_bytes_that_are_not_text_and_a_missing_file_are_refused(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    binary = await client.post(
        "/contacts/imports",
        files={"file": ("x.csv", b"email\n\xff\xfe\x00")},
        headers=tenant.headers,
    )
    assert_error(binary, 422, "validation_error")
    assert "UTF-8" in binary.json()["message"]
    missing = await client.post(
        "/contacts/imports", data={"on_conflict": "skip"}, headers=tenant.headers
    )
    assert missing.status_code == 422 and missing.json()["name"] in (
        "validation_error", "missing_required_field"
    )  # fmt: skip


async def test_a_crash_in_a_chunk_leaves_nothing_of_it_and_the_import_goes_on(
    client: httpx.AsyncClient, tenant: Tenant, context: ServiceContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    rows = audiences.CHUNK_ROWS * 2 + 7
    text = "email\n" + "".join(f"p{n}@corp.io\n" for n in range(rows))
    response = await upload(client, tenant, text)
    import_id = response.json()["id"]
    worker = ImportWorker(context)
    assert (await worker.claim(1)).more  # the first chunk

    from mailbridge.services.audiences import _imports

    real = _imports._file_under

    async def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("runner killed")

    monkeypatch.setattr(_imports, "_file_under", crash)
    with pytest.raises(RuntimeError):
        await worker.claim(1)
    assert await count_contacts(context, tenant.team_id) == audiences.CHUNK_ROWS
    middle = (await client.get(f"/contacts/imports/{import_id}", headers=tenant.headers)).json()
    assert middle["status"] == "in_progress"
    assert middle["counts"]["created"] == audiences.CHUNK_ROWS

    monkeypatch.setattr(_imports, "_file_under", real)
    assert await ImportWorker(context).write_all() == 2  # another runner: the other two
    done = (await client.get(f"/contacts/imports/{import_id}", headers=tenant.headers)).json()
    assert done["status"] == "completed"
    assert done["counts"] == {"total": rows, "created": rows, "updated": 0, "skipped": 0,
                              "failed": 0}  # fmt: skip
    async with context.database.session() as session:
        assert await session.scalar(select(func.count()).select_from(Contact)) == rows
        assert await session.scalar(select(func.count()).select_from(ContactImportChunk)) == 0


async def test_imports_are_listed_by_status_and_kept_to_their_team(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants, context: ServiceContext
) -> None:
    other_tenant = await tenants.create()
    done = await imported(client, tenant, context, "email\na@corp.io\n")
    waiting = await upload(client, tenant, "email\nb@corp.io\n")
    listed = await client.get("/contacts/imports", headers=tenant.headers)
    assert [item["id"] for item in listed.json()["data"]] == [waiting.json()["id"], done["id"]]
    queued = await client.get("/contacts/imports?status=queued", headers=tenant.headers)
    assert [item["id"] for item in queued.json()["data"]] == [waiting.json()["id"]]
    bad = await client.get("/contacts/imports?status=done", headers=tenant.headers)
    assert_error(bad, 422, "validation_error")
    theirs = await client.get(f"/contacts/imports/{done['id']}", headers=other_tenant.headers)
    assert_error(theirs, 404, "not_found")
    assert (await client.get("/contacts/imports", headers=other_tenant.headers)).json()[
        "data"
    ] == []
