"""The Resend SDK reads sent email and manages suppressions on a real ``mailbridge serve``;
open pixel, click redirect and one-click unsubscribe work over real HTTP.

Emails are seeded straight into the server's SQLite file (as the send API would leave
them), so this tier depends only on the reading and tracking code.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import resend
import resend.exceptions
from sqlalchemy import select

from mailbridge.config import Settings
from mailbridge.mail import tracking
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.tables import Audience, Contact, Team
from tests.acceptance.conftest import Server
from tests.integration.email_rows import AttachmentRow, add_email


def server_context(server: Server) -> ServiceContext:
    return ServiceContext.from_settings(Settings(data_dir=Path(server.env["MAILBRIDGE_DATA_DIR"])))


async def seed(server: Server) -> dict[str, Any]:
    """An email with an attachment and a contact, and the links its recipient would get."""
    context = server_context(server)
    try:
        async with context.database.session() as session:
            team = await session.scalar(select(Team).where(Team.name == "acme"))
            assert team is not None
            now = context.clock.now()
            audience = Audience(team_id=team.id, name="General", created_at=now)
            session.add(audience)
            await session.flush()
            contact = Contact(
                team_id=team.id, audience_id=audience.id, email="ada@mail.net", properties={},
                created_at=now, updated_at=now,
            )  # fmt: skip
            session.add(contact)
            await session.commit()
        email = await add_email(
            context, team.id, to=["Ada <ada@mail.net>"], subject="Your report",
            contact_id=contact.id,
            attachments=[AttachmentRow("report.txt", content=b"quarterly numbers",
                                       content_type="text/plain")],
        )  # fmt: skip
        # The first use makes the instance secret; the server reads the same row.
        secret = await instance_secret(context.database, context.settings)
        base = server.base_url
        return {
            "email_id": email.id,
            "contact_id": contact.id,
            "pixel": tracking.open_pixel_url(base, secret, email.id),
            "click": tracking.click_url(base, secret, email.id, "https://acme.io/offer?x=1"),
            "unsubscribe": tracking.unsubscribe_url(base, secret, email.id),
        }
    finally:
        await context.database.dispose()


async def contact_unsubscribed(server: Server, contact_id: str) -> bool:
    context = server_context(server)
    try:
        async with context.database.session() as session:
            contact = await session.get(Contact, contact_id)
            assert contact is not None
            return contact.unsubscribed
    finally:
        await context.database.dispose()


def test_sdk_gets_an_email_and_its_attachments(sdk: Server) -> None:
    seeded = asyncio.run(seed(sdk))
    email_id = seeded["email_id"]

    email: Any = resend.Emails.get(email_id)
    assert email["object"] == "email" and email["id"] == email_id
    assert email["from"] == "Acme <news@acme.io>" and email["to"] == ["Ada <ada@mail.net>"]
    assert email["subject"] == "Your report" and email["last_event"] == "delivered"
    assert [event["type"] for event in email["events"]] == ["queued", "sent", "delivered"]
    listed: Any = resend.Emails.list({"limit": 10})
    assert [item["id"] for item in listed["data"]] == [email_id] and listed["has_more"] is False

    attachments: Any = resend.Emails.Attachments.list(email_id)
    assert attachments["object"] == "list" and attachments["has_more"] is False
    [attachment] = attachments["data"]
    assert attachment["filename"] == "report.txt" and attachment["size"] == 17
    one: Any = resend.Emails.Attachments.get(email_id, attachment["id"])
    assert one["object"] == "attachment" and one["content_type"] == "text/plain"
    # The download link is signed: no key needed (the path, against this server's port).
    download = httpx.get(sdk.base_url + urlsplit(one["download_url"]).path)
    assert download.status_code == 200 and download.content == b"quarterly numbers"

    with pytest.raises(resend.exceptions.ResendError) as missing:
        resend.Emails.get("00000000-0000-7000-8000-000000000000")
    assert missing.value.code == 404 and missing.value.error_type == "not_found"


def test_tracking_links_work_over_http(sdk: Server) -> None:
    seeded = asyncio.run(seed(sdk))
    email_id = seeded["email_id"]
    with httpx.Client(headers={"User-Agent": ""}) as browser:
        pixel = browser.get(seeded["pixel"])
        assert pixel.status_code == 200 and pixel.headers["content-type"] == "image/gif"
        assert resend.Emails.get(email_id)["last_event"] == "opened"

        click = browser.get(seeded["click"], follow_redirects=False)
        assert click.status_code == 302
        assert click.headers["location"] == "https://acme.io/offer?x=1"
        email: Any = resend.Emails.get(email_id)
        assert email["last_event"] == "clicked"
        assert [event["type"] for event in email["events"]][-2:] == ["opened", "clicked"]
        assert email["events"][-1]["data"]["click"]["link"] == "https://acme.io/offer?x=1"

        bad = browser.get(seeded["click"][:-4] + "AAAA", follow_redirects=False)
        assert bad.status_code == 404 and bad.json()["name"] == "not_found"

        page = browser.get(seeded["unsubscribe"])
        assert page.status_code == 200 and "<form" in page.text
        one_click = browser.post(
            seeded["unsubscribe"],
            content="List-Unsubscribe=One-Click",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert one_click.status_code == 200
    assert asyncio.run(contact_unsubscribed(sdk, seeded["contact_id"])) is True
    assert sdk.stop() == 0


def test_sdk_manages_suppressions(sdk: Server) -> None:
    added: Any = resend.Suppressions.add({"email": "Bounce@Mail.net"})
    assert added["object"] == "suppression"
    got: Any = resend.Suppressions.get("bounce@mail.net")
    assert got["id"] == added["id"] and got["origin"] == "manual" and got["source_id"] is None
    assert resend.Suppressions.get(added["id"])["email"] == "bounce@mail.net"
    listed: Any = resend.Suppressions.list({"origin": "manual", "limit": 5})
    assert [item["id"] for item in listed["data"]] == [added["id"]]
    batch: Any = resend.Suppressions.Batch.add({"emails": ["a@mail.net", "b@mail.net"]})
    assert len(batch["data"]) == 2
    removed: Any = resend.Suppressions.remove("bounce@mail.net")
    assert removed["deleted"] is True and removed["id"] == added["id"]
    gone: Any = resend.Suppressions.Batch.remove({"emails": ["a@mail.net", "b@mail.net"]})
    assert len(gone["data"]) == 2
    assert resend.Suppressions.list()["data"] == []
    with pytest.raises(resend.exceptions.ResendError) as missing:
        resend.Suppressions.get("bounce@mail.net")
    assert missing.value.code == 404
