"""Spec §4.4: GET /emails (paginated, filtered), GET /emails/:id, attachments."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import select

from mailbridge.mail.signed_links import download_url
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.tables import EmailAttachment, EmailEvent
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.email_rows import AttachmentRow, add_email, at
from tests.integration.test_auth import assert_error

SUMMARY_KEYS = {
    "id", "message_id", "from", "to", "cc", "bcc", "reply_to", "subject", "status", "last_event",
    "created_at", "scheduled_at", "sent_at", "tags",
}  # fmt: skip


async def test_get_email_is_the_record_with_ordered_events(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(
        context, tenant.team_id,
        to=["Ada <Ada@Mail.net>"], cc=["cc@mail.net"], bcc=["bcc@mail.net"],
        reply_to=["help@acme.io"], subject="Welcome", html="<b>Hi</b>", text="Hi",
        status="delivered", created_at=at(5),
        events=["queued", "sent", ("delivered", {"smtp_response": "250 ok"})],
        tags=[{"name": "category", "value": "welcome"}],
    )  # fmt: skip
    # An event written later but timestamped earlier still comes first.
    async with context.database.session() as session:
        session.add(
            EmailEvent(
                email_id=email.id, team_id=tenant.team_id, type="scheduled", data={},
                created_at=at(5) - timedelta(hours=1),
            )
        )  # fmt: skip
        await session.commit()

    response = await client.get(f"/emails/{email.id}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body == {
        "object": "email",
        "id": email.id,
        "from": "Acme <news@acme.io>",
        "to": ["Ada <Ada@Mail.net>"],
        "cc": ["cc@mail.net"],
        "bcc": ["bcc@mail.net"],
        "reply_to": ["help@acme.io"],
        "subject": "Welcome",
        "html": "<b>Hi</b>",
        "text": "Hi",
        "status": "delivered",
        "last_event": "delivered",
        "message_id": f"<{email.id}@acme.io>",
        "created_at": "2026-01-05T12:00:00.000Z",
        "scheduled_at": None,
        "sent_at": "2026-01-05T12:00:00.001Z",
        "tags": [{"name": "category", "value": "welcome"}],
        "recipients": [
            {"email": "ada@mail.net", "status": "delivered"},
            {"email": "cc@mail.net", "status": "delivered"},
            {"email": "bcc@mail.net", "status": "delivered"},
        ],
        "events": [
            {"type": "scheduled", "created_at": "2026-01-05T11:00:00.000Z"},
            {"type": "queued", "created_at": "2026-01-05T12:00:00.000Z"},
            {"type": "sent", "created_at": "2026-01-05T12:00:00.001Z"},
            {
                "type": "delivered",
                "created_at": "2026-01-05T12:00:00.002Z",
                "data": {"smtp_response": "250 ok"},
            },
        ],
    }
    assert "statusCode" not in body


async def test_list_is_light_newest_first_and_paginated(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, tenants: Tenants
) -> None:
    ids = [(await add_email(context, tenant.team_id, created_at=at(day))).id for day in (1, 2, 3)]
    other = await tenants.create()
    await add_email(context, other.team_id, created_at=at(4))

    first = await client.get("/emails", params={"limit": 2}, headers=tenant.headers)
    assert first.status_code == 200, first.text
    page = first.json()
    assert page["object"] == "list" and page["has_more"] is True
    assert [item["id"] for item in page["data"]] == [ids[2], ids[1]]
    assert set(page["data"][0]) == SUMMARY_KEYS  # no bodies, no events
    second = await client.get(
        "/emails", params={"limit": 2, "after": ids[1]}, headers=tenant.headers
    )
    assert [item["id"] for item in second.json()["data"]] == [ids[0]]
    assert second.json()["has_more"] is False
    back = await client.get("/emails", params={"before": ids[0]}, headers=tenant.headers)
    assert [item["id"] for item in back.json()["data"]] == [ids[2], ids[1]]
    # Always paginated: the default page is 20.
    many = [(await add_email(context, tenant.team_id)).id for _ in range(20)]
    default = (await client.get("/emails", headers=tenant.headers)).json()
    assert len(default["data"]) == 20 and default["has_more"] is True
    assert {item["id"] for item in default["data"]} == set(many)
    assert_error(
        await client.get("/emails", params={"limit": 101}, headers=tenant.headers),
        422, "validation_error",
    )  # fmt: skip


async def list_ids(client: httpx.AsyncClient, tenant: Tenant, **params: object) -> list[str]:
    response = await client.get("/emails", params=params, headers=tenant.headers)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


async def test_filters_by_status_recipient_dates_and_tags(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    welcome = await add_email(
        context, tenant.team_id, to=["Ada <ada@mail.net>"], created_at=at(1),
        tags=[{"name": "category", "value": "welcome"}, {"name": "vip"}],
    )  # fmt: skip
    bounced = await add_email(
        context, tenant.team_id, to=["bob@mail.net"], cc=["ADA@mail.net"], status="bounced",
        created_at=at(2), tags=[{"name": "category", "value": "billing"}],
    )  # fmt: skip
    scheduled = await add_email(
        context, tenant.team_id, to=["zada@mail.net"], status="scheduled", created_at=at(3),
        events=["scheduled"],
    )  # fmt: skip

    assert await list_ids(client, tenant, status="bounced") == [bounced.id]
    assert await list_ids(client, tenant, status="scheduled") == [scheduled.id]
    assert await list_ids(client, tenant, status="opened") == []
    # Exact address, any case, in to or cc; "ada@mail.net" is not "zada@mail.net".
    assert await list_ids(client, tenant, recipient="Ada@Mail.NET") == [bounced.id, welcome.id]
    assert await list_ids(client, tenant, recipient="da@mail.net") == []
    assert await list_ids(client, tenant, recipient="bob@mail.net", status="bounced") == [
        bounced.id
    ]
    # Dates: exclusive bounds, timestamps or bare dates.
    assert await list_ids(client, tenant, created_after="2026-01-01T12:00:00.000Z") == [
        scheduled.id, bounced.id,
    ]  # fmt: skip
    assert await list_ids(client, tenant, created_before="2026-01-03T12:00:00Z") == [
        bounced.id, welcome.id,
    ]  # fmt: skip
    assert await list_ids(
        client, tenant, created_after="2026-01-02", created_before="2026-01-03"
    ) == [bounced.id]
    # Tags: a name (any value) or name:value; repeated, all must match.
    assert await list_ids(client, tenant, tag="category") == [bounced.id, welcome.id]
    assert await list_ids(client, tenant, tag="category:welcome") == [welcome.id]
    assert await list_ids(client, tenant, tag="vip") == [welcome.id]
    assert await list_ids(client, tenant, tag=["category:billing", "vip"]) == []
    assert await list_ids(client, tenant, tag=["category", "vip"]) == [welcome.id]
    assert await list_ids(client, tenant, tag="category:nope") == []


@pytest.mark.parametrize(
    "params",
    [
        {"status": "lost"},
        {"recipient": "not-an-address"},
        {"created_after": "yesterday-ish"},
        {"created_before": "2026-13-01"},
        {"tag": ":value"},
    ],
)
async def test_bad_filters_are_422(
    client: httpx.AsyncClient, tenant: Tenant, params: dict[str, str]
) -> None:
    response = await client.get("/emails", params=params, headers=tenant.headers)
    assert_error(response, 422, "validation_error")


async def test_foreign_and_unknown_ids_are_404(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, tenants: Tenants
) -> None:
    other = await tenants.create()
    foreign = await add_email(
        context, other.team_id, attachments=[AttachmentRow("a.txt", content=b"x")]
    )
    mine = await add_email(context, tenant.team_id)
    async with context.database.session() as session:
        foreign_attachment = await session.scalar(
            select(EmailAttachment.id).where(EmailAttachment.email_id == foreign.id)
        )
    for path in (
        f"/emails/{foreign.id}",
        f"/emails/{foreign.id}/attachments",
        f"/emails/{foreign.id}/attachments/{foreign_attachment}",
        f"/emails/{mine.id}/attachments/{foreign_attachment}",
        "/emails/not-a-uuid",
        "/emails/not-a-uuid/attachments",
        f"/emails/{mine.id}/attachments/not-a-uuid",
    ):
        assert_error(await client.get(path, headers=tenant.headers), 404, "not_found")
    # The other team sees its own.
    assert (await client.get(f"/emails/{foreign.id}", headers=other.headers)).status_code == 200


async def test_reading_needs_a_full_access_key(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, tenants: Tenants
) -> None:
    email = await add_email(context, tenant.team_id)
    _key_id, sending_token = await tenants.key(tenant, Permission.SENDING_ACCESS)
    for path in ("/emails", f"/emails/{email.id}", f"/emails/{email.id}/attachments"):
        response = await client.get(path, headers=bearer(sending_token))
        assert_error(response, 401, "restricted_api_key")
    assert_error(await client.get("/emails"), 401, "missing_api_key")


async def test_attachments_are_listed_whole_with_download_links(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(
        context,
        tenant.team_id,
        attachments=[
            AttachmentRow("report.pdf", content=b"%PDF-1.4 report", content_type="application/pdf"),
            AttachmentRow("logo.png", content=b"\x89PNG...", content_type="image/png",
                          content_id="logo"),
            AttachmentRow("remote.csv", path="https://files.acme.io/remote.csv",
                          content_type="text/csv"),
        ],
    )  # fmt: skip
    # Not paginated: pagination parameters change nothing.
    response = await client.get(
        f"/emails/{email.id}/attachments", params={"limit": 1}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "list" and body["has_more"] is False
    report, logo, remote = body["data"]
    assert [report["filename"], logo["filename"], remote["filename"]] == [
        "report.pdf", "logo.png", "remote.csv",
    ]  # fmt: skip
    assert report["content_type"] == "application/pdf" and report["size"] == 15
    assert report["content_disposition"] == "attachment" and report["content_id"] is None
    assert logo["content_disposition"] == "inline" and logo["content_id"] == "logo"
    assert remote["download_url"] == "https://files.acme.io/remote.csv"
    assert remote["size"] is None and remote["expires_at"] is None
    assert report["expires_at"] > "2026"

    # The download link serves the bytes, without a key.
    url = urlsplit(report["download_url"])
    assert f"{url.scheme}://{url.netloc}" == context.settings.public_url
    download = await client.get(url.path)
    assert download.status_code == 200
    assert download.content == b"%PDF-1.4 report"
    assert download.headers["content-type"] == "application/pdf"
    assert "report.pdf" in download.headers["content-disposition"]

    single = await client.get(
        f"/emails/{email.id}/attachments/{logo['id']}", headers=tenant.headers
    )
    assert single.status_code == 200
    shown = single.json()
    assert shown["object"] == "attachment"
    assert {
        k: v for k, v in shown.items() if k not in ("object", "download_url", "expires_at")
    } == {k: v for k, v in logo.items() if k not in ("download_url", "expires_at")}
    logo_bytes = await client.get(urlsplit(shown["download_url"]).path)
    assert logo_bytes.content == b"\x89PNG..." and logo_bytes.headers["content-type"] == "image/png"


async def test_download_links_are_signed_and_expire(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(
        context, tenant.team_id, attachments=[AttachmentRow("a.txt", content=b"secret bytes")]
    )
    listed = (await client.get(f"/emails/{email.id}/attachments", headers=tenant.headers)).json()[
        "data"
    ][0]
    path = urlsplit(listed["download_url"]).path
    assert (await client.get(path)).status_code == 200
    tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert_error(await client.get(tampered), 404, "not_found")
    secret = await instance_secret(context.database, context.settings)
    expired = download_url(
        "http://x", secret, listed["id"], context.clock.now() - timedelta(seconds=1)
    )
    assert_error(await client.get(urlsplit(expired).path), 404, "not_found")
