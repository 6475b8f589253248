"""Open pixel, click redirect, one-click unsubscribe, engagement rows, the instance secret."""

from __future__ import annotations

import asyncio
from datetime import datetime
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import select

from mailbridge.api.routers.tracking import PIXEL
from mailbridge.mail import tracking
from mailbridge.mail.signed_links import id_bytes
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.services.kernel._instance import SECRET_SETTING
from mailbridge.storage.database import Database
from mailbridge.storage.tables import (
    ActivityEvent,
    Audience,
    Contact,
    ContactEngagement,
    Email,
    EmailEvent,
    InstanceSetting,
)
from mailbridge.storage.types import new_id
from tests.integration.conftest import Tenant, Tenants
from tests.integration.email_rows import add_email
from tests.integration.test_auth import assert_error
from tests.unit.test_signed_links import legacy_token


async def secret_of(context: ServiceContext) -> bytes:
    return await instance_secret(context.database, context.settings)


def path_of(url: str) -> str:
    return urlsplit(url).path


async def events_of(context: ServiceContext, email_id: str) -> list[EmailEvent]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(EmailEvent)
            .where(EmailEvent.email_id == email_id)
            .order_by(EmailEvent.created_at, EmailEvent.id)
        )
        return list(rows.all())


async def status_of(context: ServiceContext, email_id: str) -> tuple[str, str]:
    async with context.database.session() as session:
        email = await session.get(Email, email_id)
        assert email is not None
        return email.status, email.last_event


async def activity(context: ServiceContext, team_id: str, type_: str) -> list[ActivityEvent]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(ActivityEvent)
            .where(ActivityEvent.team_id == team_id, ActivityEvent.type == type_)
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return list(rows.all())


@pytest.fixture
def anonymous(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """The test client without a key and without a User-Agent, as a mail client may be."""
    del client.headers["User-Agent"]
    return client


async def test_the_pixel_records_opens(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(context, tenant.team_id)
    url = tracking.open_pixel_url(context.settings.public_url, await secret_of(context), email.id)

    # No key and no User-Agent: refused on the API, fine under /t/.
    assert_error(await anonymous.get("/emails"), 403, "validation_error")
    response = await anonymous.get(path_of(url))
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/gif"
    assert response.content == PIXEL and response.content.startswith(b"GIF89a")
    assert "no-store" in response.headers["cache-control"]
    assert await status_of(context, email.id) == ("opened", "opened")
    # A repeat open is an event too; the status stays.
    assert (await anonymous.get(path_of(url))).status_code == 200
    types = [event.type for event in await events_of(context, email.id)]
    assert types == ["queued", "sent", "delivered", "opened", "opened"]
    assert await status_of(context, email.id) == ("opened", "opened")
    opened = await activity(context, tenant.team_id, "email.opened")
    assert [event.data["email_id"] for event in opened] == [email.id, email.id]


async def test_an_open_never_demotes_a_click_or_hides_a_bounce(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    secret = await secret_of(context)
    clicked = await add_email(context, tenant.team_id, status="clicked")
    bounced = await add_email(context, tenant.team_id, status="bounced")
    for email in (clicked, bounced):
        url = tracking.open_pixel_url(context.settings.public_url, secret, email.id)
        assert (await anonymous.get(path_of(url))).status_code == 200
        assert [event.type for event in await events_of(context, email.id)][-1] == "opened"
    assert await status_of(context, clicked.id) == ("clicked", "clicked")
    assert await status_of(context, bounced.id) == ("bounced", "bounced")


async def test_a_bad_pixel_token_still_gets_the_image_and_records_nothing(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(context, tenant.team_id)
    forged = tracking.open_pixel_url("http://x", b"not our secret", email.id)
    for path in (path_of(forged), "/t/o/garbage", "/t/o/a.b"):
        response = await anonymous.get(path)
        assert response.status_code == 200 and response.content == PIXEL
    assert [event.type for event in await events_of(context, email.id)] == [
        "queued", "sent", "delivered",
    ]  # fmt: skip
    # A valid token of an email that is gone: the image, nothing else.
    gone = tracking.open_pixel_url("http://x", await secret_of(context), new_id())
    assert (await anonymous.get(path_of(gone))).content == PIXEL


async def test_a_click_redirects_and_is_recorded(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(context, tenant.team_id)
    target = "https://shop.acme.io/p?id=3&ref=mail"
    url = tracking.click_url(
        context.settings.public_url, await secret_of(context), email.id, target
    )

    response = await anonymous.get(path_of(url), headers={"User-Agent": "Mail/1.0"})
    assert response.status_code == 302
    assert response.headers["location"] == target
    assert await status_of(context, email.id) == ("clicked", "clicked")
    [clicked] = [event for event in await events_of(context, email.id) if event.type == "clicked"]
    click = clicked.data["click"]
    assert click["link"] == target and click["userAgent"] == "Mail/1.0"
    assert click["ipAddress"] and click["timestamp"].endswith("Z")
    [published] = await activity(context, tenant.team_id, "email.clicked")
    assert published.data["email_id"] == email.id and published.data["click"]["link"] == target


async def test_a_bad_click_token_is_404_and_never_a_redirect(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(context, tenant.team_id)
    secret = await secret_of(context)
    genuine = path_of(tracking.click_url("http://x", secret, email.id, "https://acme.io"))
    forged = path_of(tracking.click_url("http://x", b"attacker", email.id, "https://evil.io"))
    # The genuine MAC on a payload naming another target.
    evil_payload = forged.rsplit("/", 1)[1].split(".")[0]
    spliced = f"/t/c/{evil_payload}.{genuine.split('.')[-1]}"
    open_token = path_of(tracking.open_pixel_url("http://x", secret, email.id)).rsplit("/", 1)[1]
    for path in (forged, spliced, "/t/c/garbage", f"/t/c/{open_token}"):
        response = await anonymous.get(path)
        assert_error(response, 404, "not_found")
        assert "location" not in response.headers
    assert "clicked" not in [event.type for event in await events_of(context, email.id)]


async def test_links_signed_before_itsdangerous_still_work(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    """Mail already sent carries tokens of the earlier scheme: they open, redirect and
    unsubscribe as they did."""
    contact = await add_contact(context, tenant.team_id, "ada@mail.net")
    email = await add_email(context, tenant.team_id, to=["ada@mail.net"], contact_id=contact.id)
    secret, key = await secret_of(context), id_bytes(email.id)
    target = "https://shop.acme.io/p?id=3&ref=mail"

    assert (
        await anonymous.get(f"/t/o/{legacy_token(secret, tracking.OPEN, key)}")
    ).content == PIXEL
    click = legacy_token(secret, tracking.CLICK, key + target.encode())
    response = await anonymous.get(f"/t/c/{click}")
    assert response.status_code == 302 and response.headers["location"] == target
    unsubscribe = f"/t/u/{legacy_token(secret, tracking.UNSUBSCRIBE, key)}"
    assert (
        await anonymous.post(unsubscribe, content="List-Unsubscribe=One-Click")
    ).status_code == 200
    assert await unsubscribed(context, contact.id)
    types = [event.type for event in await events_of(context, email.id)]
    assert types[-2:] == ["opened", "clicked"]
    # Held to the secret and the purpose, as before.
    assert_error(
        await anonymous.get(f"/t/c/{legacy_token(b'x', tracking.CLICK, key)}"), 404, "not_found"
    )
    assert_error(
        await anonymous.get(f"/t/c/{legacy_token(secret, tracking.OPEN, key)}"), 404, "not_found"
    )


async def add_contact(
    context: ServiceContext, team_id: str, email: str, audience_name: str = "General"
) -> Contact:
    now = context.clock.now()
    async with context.database.session() as session:
        audience = await session.scalar(
            select(Audience).where(Audience.team_id == team_id, Audience.name == audience_name)
        )
        if audience is None:
            audience = Audience(team_id=team_id, name=audience_name, created_at=now)
            session.add(audience)
            await session.flush()
        contact = Contact(
            team_id=team_id, audience_id=audience.id, email=email, properties={},
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(contact)
        await session.commit()
        return contact


async def unsubscribed(context: ServiceContext, contact_id: str) -> bool:
    async with context.database.session() as session:
        contact = await session.get(Contact, contact_id)
        assert contact is not None
        return contact.unsubscribed


async def test_one_click_unsubscribe_updates_the_contact(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    contact = await add_contact(context, tenant.team_id, "ada@mail.net")
    bystander = await add_contact(context, tenant.team_id, "ada@mail.net", "Other list")
    email = await add_email(context, tenant.team_id, to=["ada@mail.net"], contact_id=contact.id)
    path = path_of(
        tracking.unsubscribe_url(context.settings.public_url, await secret_of(context), email.id)
    )

    page = await anonymous.get(path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<form method="post"' in page.text and 'name="List-Unsubscribe"' in page.text
    assert not await unsubscribed(context, contact.id)  # a GET changes nothing

    response = await anonymous.post(
        path,
        content="List-Unsubscribe=One-Click",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200
    assert await unsubscribed(context, contact.id)
    assert not await unsubscribed(context, bystander.id)  # the email named its contact
    [updated] = await activity(context, tenant.team_id, "contact.updated")
    assert updated.data["id"] == contact.id and updated.data["unsubscribed"] is True
    assert updated.data["changes"] == {"unsubscribed": {"old": False, "new": True}}

    # Again: still 200, nothing more to record.
    again = await anonymous.post(path, content="List-Unsubscribe=One-Click")
    assert again.status_code == 200
    assert len(await activity(context, tenant.team_id, "contact.updated")) == 1


async def test_unsubscribe_without_a_contact_reaches_every_contact_of_the_address(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, tenants: Tenants
) -> None:
    first = await add_contact(context, tenant.team_id, "ada@mail.net")
    second = await add_contact(context, tenant.team_id, "ada@mail.net", "Other list")
    someone_else = await add_contact(context, tenant.team_id, "bob@mail.net")
    other_team = await tenants.create()
    foreign = await add_contact(context, other_team.team_id, "ada@mail.net")
    email = await add_email(context, tenant.team_id, to=["Ada <ADA@mail.net>"])
    url = tracking.unsubscribe_url("http://x", await secret_of(context), email.id)

    assert (
        await anonymous.post(path_of(url), content="List-Unsubscribe=One-Click")
    ).status_code == 200
    assert await unsubscribed(context, first.id) and await unsubscribed(context, second.id)
    assert not await unsubscribed(context, someone_else.id)
    assert not await unsubscribed(context, foreign.id)
    updated = await activity(context, tenant.team_id, "contact.updated")
    assert sorted(event.data["id"] for event in updated) == sorted([first.id, second.id])


async def test_a_bad_unsubscribe_token_is_404(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    contact = await add_contact(context, tenant.team_id, "ada@mail.net")
    email = await add_email(context, tenant.team_id, contact_id=contact.id)
    forged = path_of(tracking.unsubscribe_url("http://x", b"attacker", email.id))
    pixel = path_of(tracking.open_pixel_url("http://x", await secret_of(context), email.id))
    for path in (forged, "/t/u/" + pixel.rsplit("/", 1)[1]):
        assert_error(await anonymous.get(path), 404, "not_found")
        assert_error(
            await anonymous.post(path, content="List-Unsubscribe=One-Click"), 404, "not_found"
        )
    assert not await unsubscribed(context, contact.id)


async def engagements(context: ServiceContext, contact_id: str) -> dict[tuple[str, str], datetime]:
    async with context.database.session() as session:
        rows = await session.scalars(
            select(ContactEngagement).where(ContactEngagement.contact_id == contact_id)
        )
        return {(row.campaign_id, row.kind): row.first_at for row in rows}


async def test_campaign_opens_and_clicks_fill_engagement(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    contact = await add_contact(context, tenant.team_id, "ada@mail.net")
    campaign_id, other_campaign = new_id(), new_id()
    email = await add_email(context, tenant.team_id, contact_id=contact.id, campaign_id=campaign_id)
    transactional = await add_email(context, tenant.team_id, contact_id=contact.id)
    secret = await secret_of(context)

    pixel = path_of(tracking.open_pixel_url("http://x", secret, email.id))
    assert (await anonymous.get(pixel)).status_code == 200
    first = await engagements(context, contact.id)
    assert set(first) == {(campaign_id, "opened")}
    assert (await anonymous.get(pixel)).status_code == 200  # a repeat keeps the first
    assert await engagements(context, contact.id) == first

    # Without a campaign, nothing to engage with.
    plain = path_of(tracking.open_pixel_url("http://x", secret, transactional.id))
    assert (await anonymous.get(plain)).status_code == 200
    assert await engagements(context, contact.id) == first

    other = await add_email(
        context, tenant.team_id, contact_id=contact.id, campaign_id=other_campaign
    )
    click = path_of(tracking.click_url("http://x", secret, other.id, "https://acme.io"))
    assert (await anonymous.get(click)).status_code == 302
    # A click implies the open.
    assert set(await engagements(context, contact.id)) == {
        (campaign_id, "opened"), (other_campaign, "opened"), (other_campaign, "clicked"),
    }  # fmt: skip


async def test_engagement_skips_a_deleted_contact(
    anonymous: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_email(context, tenant.team_id, contact_id=new_id(), campaign_id=new_id())
    pixel = path_of(tracking.open_pixel_url("http://x", await secret_of(context), email.id))
    assert (await anonymous.get(pixel)).status_code == 200
    assert await status_of(context, email.id) == ("opened", "opened")
    async with context.database.session() as session:
        assert await session.scalar(select(ContactEngagement.contact_id)) is None


async def test_the_instance_secret_is_made_once_and_shared(context: ServiceContext) -> None:
    assert context.settings.secret_key is None
    # Several "processes" (their own engines) ask at once: one secret wins for all.
    databases = [Database.from_settings(context.settings) for _ in range(4)]
    try:
        secrets = await asyncio.gather(
            *(instance_secret(database, context.settings) for database in databases)
        )
    finally:
        for database in databases:
            await database.dispose()
    assert len(set(secrets)) == 1 and len(secrets[0]) >= 32
    assert await instance_secret(context.database, context.settings) == secrets[0]
    async with context.database.session() as session:
        stored = await session.scalar(
            select(InstanceSetting.value).where(InstanceSetting.key == SECRET_SETTING)
        )
    assert stored is not None and stored.encode() == secrets[0]
    configured = context.settings.model_copy(update={"secret_key": "configured-secret"})
    assert await instance_secret(context.database, configured) == b"configured-secret"
