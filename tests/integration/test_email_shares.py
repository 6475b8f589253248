"""Share links: ``POST /emails/:id/share`` makes a public, expiring link to an email (sent or
received), the page shows it framed with no script, ``DELETE`` revokes every link, and the
token never reaches a log."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import insert, select

from mailbridge.clock import FakeClock
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import EmailShare, ReceivedEmail, RequestLog
from mailbridge.storage.types import new_id
from tests.integration.conftest import Tenant, Tenants
from tests.integration.email_factory import add_domain, add_email
from tests.integration.test_auth import assert_error


class Frame(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.frames: list[dict[str, str | None]] = []
        self.scripts = 0
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "iframe":
            self.frames.append(dict(attrs))
        if tag == "script" or any(name.startswith("on") for name, _ in attrs):
            self.scripts += 1


async def share(
    client: httpx.AsyncClient, tenant: Tenant, email_id: str, **body: Any
) -> httpx.Response:
    return await client.post(f"/emails/{email_id}/share", json=body, headers=tenant.headers)


def path_of(url: str) -> str:
    return urlsplit(url).path


async def test_a_sent_email_is_shown_to_whoever_holds_the_link_until_it_expires(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    assert isinstance(context.clock, FakeClock)
    domain = await add_domain(context, tenant.team_id)
    email = await add_email(
        context, domain, subject="Your <order>", html='<p>Thanks!</p><img src="https://x.io/a.png">'
    )
    made = await share(client, tenant, email.id, expires_in="2 hours")
    assert made.status_code == 201, made.text
    body = made.json()
    assert set(body) == {"object", "id", "url", "expires_at"}
    assert body["object"] == "email" and body["id"] == email.id
    assert body["url"].startswith(context.settings.public_url.rstrip("/") + "/share/")

    page = await client.get(path_of(body["url"]))  # no key: a public page
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert policy.startswith("default-src 'none';") and "script-src" not in policy
    assert "img-src data: https: http:" in policy  # the team's own mail shows its images
    assert page.headers["x-robots-tag"] == "noindex" and page.headers["cache-control"] == "no-store"
    assert "Your &lt;order&gt;" in page.text and "ann@corp.io" in page.text
    markup = Frame(page.text)
    assert markup.scripts == 0
    [frame] = markup.frames
    assert "sandbox" in frame and "allow-scripts" not in (frame["sandbox"] or "")
    assert "<p>Thanks!</p>" in (frame["srcdoc"] or "")
    assert (frame["srcdoc"] or "").startswith('<meta http-equiv="Content-Security-Policy"')

    context.clock.advance(timedelta(hours=2, seconds=1))
    expired = await client.get(path_of(body["url"]))
    assert expired.status_code == 404 and "expired" in expired.text
    assert "Thanks" not in expired.text


@pytest.fixture
def context(context: ServiceContext) -> ServiceContext:
    """On a clock the test moves."""
    return ServiceContext(settings=context.settings, database=context.database, clock=FakeClock())


async def test_links_last_48_hours_at_most_and_a_bad_duration_is_a_422(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    domain = await add_domain(context, tenant.team_id)
    email = await add_email(context, domain)
    now = context.clock.now()
    default = (await share(client, tenant, email.id)).json()
    capped = (await share(client, tenant, email.id, expires_in="30 days")).json()
    bare = await client.post(f"/emails/{email.id}/share", headers=tenant.headers)  # no body
    assert bare.status_code == 201, bare.text
    async with context.database.session() as session:
        rows = list(await session.scalars(select(EmailShare).order_by(EmailShare.created_at)))
    assert {row.expires_at - now for row in rows} == {timedelta(hours=48)}
    assert default["url"] != capped["url"] != bare.json()["url"]
    for wrong in ("soon", "0s", "-1h", "", "x" * 101):
        answer = await share(client, tenant, email.id, expires_in=wrong)
        assert_error(answer, 422, "validation_error")
    assert_error(await share(client, tenant, email.id, expires_in=5), 422, "validation_error")


async def test_revoking_ends_every_link_of_the_email_and_no_other(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    domain = await add_domain(context, tenant.team_id)
    email, other = await add_email(context, domain), await add_email(context, domain)
    links = [(await share(client, tenant, email.id)).json()["url"] for _ in range(2)]
    kept = (await share(client, tenant, other.id)).json()["url"]
    revoked = await client.delete(f"/emails/{email.id}/share", headers=tenant.headers)
    assert revoked.json() == {"object": "email", "id": email.id, "revoked": 2}
    assert [(await client.get(path_of(url))).status_code for url in links] == [404, 404]
    assert (await client.get(path_of(kept))).status_code == 200
    again = await client.delete(f"/emails/{email.id}/share", headers=tenant.headers)
    assert again.json()["revoked"] == 0


async def test_a_received_email_is_shared_without_its_remote_images(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    received_id = new_id()
    async with context.database.session() as session:
        await session.execute(insert(ReceivedEmail).values(
            id=received_id, team_id=tenant.team_id, envelope_from="x@elsewhere.example",
            envelope_to=["hi@shop.io"], recipient="hi@shop.io",
            from_address="Stranger <x@elsewhere.example>", to=["hi@shop.io"],
            subject="A question", text="Is it in stock?", html=None, size=10,
            blob=uuid.uuid4().hex * 2, kind="message", created_at=context.clock.now(),
        ))  # fmt: skip
        await session.commit()
    made = await share(client, tenant, received_id)
    assert made.status_code == 201, made.text
    page = await client.get(path_of(made.json()["url"]))
    assert page.status_code == 200 and "Is it in stock?" in page.text
    assert "Stranger &lt;x@elsewhere.example&gt;" in page.text
    assert "https:" not in page.headers["content-security-policy"]


async def test_only_the_teams_own_email_and_only_a_live_token(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, tenants: Tenants
) -> None:
    domain = await add_domain(context, tenant.team_id)
    email = await add_email(context, domain)
    stranger = await tenants.create()
    assert_error(await share(client, stranger, email.id), 404, "not_found")
    gone = await client.delete(f"/emails/{email.id}/share", headers=stranger.headers)
    assert_error(gone, 404, "not_found")
    assert_error(await share(client, tenant, str(uuid.uuid4())), 404, "not_found")
    for token in ("x", "a" * 43, "%00" * 10, "a" * 500):
        answer = await client.get(f"/share/{token}")
        assert answer.status_code == 404 and "default-src 'none'" in answer.headers[
            "content-security-policy"
        ]  # fmt: skip


async def test_the_link_never_reaches_the_request_log(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    domain = await add_domain(context, tenant.team_id)
    email = await add_email(context, domain)
    url = (await share(client, tenant, email.id)).json()["url"]
    token = path_of(url).rsplit("/", 1)[1]
    listed = await client.get("/logs", headers=tenant.headers)
    texts = [listed.text]
    texts += [
        (await client.get(f"/logs/{item['id']}", headers=tenant.headers)).text
        for item in listed.json()["data"]
    ]
    async with context.database.session() as session:
        texts += [repr(row.__dict__) for row in await session.scalars(select(RequestLog))]
    logged = "\n".join(texts)
    assert token not in logged
    assert re.search(r"/share/\[redacted\]", logged), logged[:2000]
