"""What the dashboard tells a browser (DESIGN §9): ``nosniff`` on every response of the
service, a strict Content-Security-Policy on every response under ``/dashboard``, pages
with no inline script, event handler or style even when the values shown are hostile,
and received mail framed with a policy that loads no remote image until asked."""

from __future__ import annotations

import uuid
from html.parser import HTMLParser

import httpx
import pytest
from sqlalchemy import insert

from mailbridge.services.accounts import _teams as teams
from mailbridge.services.accounts._teams import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ReceivedEmail
from mailbridge.storage.types import new_id
from tests import dashboard_payloads as payloads
from tests.integration.conftest import Tenant
from tests.integration.email_factory import add_domain
from tests.integration.test_dashboard import add_member, csrf_of, sign_in

STRICT = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
# A page showing mail: its sandboxed srcdoc frame inherits the page's policy.
MAIL_BLOCKED = STRICT.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'").replace(
    "img-src 'self'", "img-src 'self' data:"
)
MAIL_IMAGES = MAIL_BLOCKED.replace("img-src 'self' data:", "img-src 'self' data: https: http:")
FRAME_BLOCKED = (
    '<meta http-equiv="Content-Security-Policy" '
    "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
)
FRAME_IMAGES = FRAME_BLOCKED.replace("img-src data:", "img-src data: https: http:")
JAVASCRIPT = ("text/javascript", "application/javascript")  # what nosniff runs as script
KEY_NAME = f"\"'><svg onload={payloads.run('key')}>"  # a key's name: 50 characters at most


class Markup(HTMLParser):
    """A page's elements: what in them would run script or style from the page itself,
    the forms' confirmations and the frames' documents."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.inline: list[str] = []
        self.confirms: list[str] = []
        self.frames: list[str] = []
        self.scripts: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, value in attrs:
            if name.startswith(("on", "hx-on")) or name == "style":
                self.inline.append(f"<{tag} {name}={value!r}>")
            if (value or "").strip().lower().startswith("javascript:"):
                self.inline.append(f"<{tag} {name}={value!r}>")
        if tag == "script":
            self.scripts.append(values.get("src") or "")
            if not values.get("src"):
                self.inline.append("<script> without src")
        if tag == "style":
            self.inline.append("<style>")
        if tag == "form" and "data-confirm" in values:
            self.confirms.append(values["data-confirm"] or "")
        if tag == "iframe":
            self.frames.append(values.get("srcdoc") or "")

    handle_startendtag = handle_starttag


async def add_received(context: ServiceContext, team_id: str, html: str) -> str:
    """A received message as the inbound pipeline stores it; its id."""
    received_id = new_id()
    async with context.database.session() as session:
        await session.execute(insert(ReceivedEmail).values(
            id=received_id, team_id=team_id, envelope_from="stranger@elsewhere.example",
            envelope_to=["hi@shop.io"], recipient="hi@shop.io",
            from_address=payloads.breakout("received-from"), to=["hi@shop.io"],
            subject=payloads.breakout("received-subject"), text="The plain part.", html=html,
            size=len(html), blob=uuid.uuid4().hex * 2, kind="message",
            created_at=context.clock.now(),
        ))  # fmt: skip
        await session.commit()
    return received_id


async def test_every_response_of_the_service_says_nosniff(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    answers = [
        await client.get("/health"),
        await client.get("/openapi.json"),
        await client.get("/domains", headers=tenant.headers),
        await client.get("/domains"),  # 401
        await client.get("/emails/not-an-id", headers=tenant.headers),  # 404
        await client.post("/emails", json={"to": 1}, headers=tenant.headers),  # 422
        await client.get("/t/u/not-a-token"),
        await client.get("/dashboard/login"),
    ]
    for answer in answers:
        assert answer.headers.get("x-content-type-options") == "nosniff", answer.request.url


async def test_the_pages_a_recipient_opens_from_an_email_run_no_script(
    client: httpx.AsyncClient,
) -> None:
    answers = [
        await client.get("/t/u/not-a-token"),  # the unsubscribe page's link
        await client.post("/t/u/not-a-token"),
        await client.get("/t/c/not-a-token"),
        await client.get("/polls/vote/not-a-token"),
    ]
    for answer in answers:
        where = answer.request.url
        policy = answer.headers.get("content-security-policy", "")
        assert policy.startswith("default-src 'none';") and "script-src" not in policy, where
        assert "frame-ancestors 'none'" in policy and "form-action 'self'" in policy, where
        assert answer.headers.get("x-content-type-options") == "nosniff", where


async def test_every_dashboard_response_carries_the_strict_policy(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    anonymous = [
        await client.get("/dashboard/members"),  # 303 to the sign-in page
        await client.get("/dashboard/login"),
        await client.get("/dashboard/static/dashboard.css"),
        await client.get("/dashboard/static/dashboard.js"),
        await client.get("/dashboard/static/htmx-2.0.4.min.js"),
        await client.get("/dashboard/static/missing.js"),
    ]
    assert [a.status_code for a in anonymous] == [303, 200, 200, 200, 200, 404]
    await sign_in(client, await add_member(context, tenant, Role.OWNER))
    signed_in = [
        await client.get("/dashboard"),
        await client.get("/dashboard/members"),
        await client.get("/dashboard/api-keys"),
        await client.get("/dashboard/emails/01a2133e-0000-7000-8000-000000000000"),  # 404 page
    ]
    assert [a.status_code for a in signed_in] == [200, 200, 200, 404]
    for answer in anonymous + signed_in:
        where = answer.request.url
        assert answer.headers.get("content-security-policy") == STRICT, where
        assert answer.headers.get("x-content-type-options") == "nosniff", where
        assert answer.headers.get("x-frame-options") == "DENY", where
        assert answer.headers.get("referrer-policy") == "same-origin", where
    script = anonymous[3]
    assert script.headers["content-type"].split(";")[0] in JAVASCRIPT
    page = Markup(signed_in[1].text)
    assert page.scripts == ["/dashboard/static/htmx-2.0.4.min.js", "/dashboard/static/dashboard.js"]
    # htmx under script-src 'self': no indicator <style> of its own, no eval, no <script> swapped in
    assert '"includeIndicatorStyles": false' in signed_in[1].text


async def test_pages_carry_no_inline_script_or_style_whatever_they_show(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    domain = await add_domain(context, tenant.team_id)
    seeded = await payloads.seed(client, tenant.headers, domain.name)
    received_id = await add_received(context, tenant.team_id, payloads.mail_html("frame"))
    async with context.database.session() as session:
        team = await teams.resolve_team(session, tenant.team_id)
        for email in (payloads.MEMBER_IN_A_STRING, payloads.MEMBER_IN_MARKUP):
            await teams.add_team_member(session, context.clock, team, email, Role.ADMIN)
        await session.commit()
    await sign_in(client, await add_member(context, tenant, Role.OWNER))
    pages = [*seeded.pages(), "/dashboard", "/dashboard/members", "/dashboard/api-keys",
             "/dashboard/received", f"/dashboard/received/{received_id}",
             f"/dashboard/received/{received_id}?images=1", "/dashboard/emails",
             "/dashboard/segments", "/dashboard/webhooks", "/dashboard/logs"]  # fmt: skip
    for path in pages:
        answer = await client.get(path)
        assert answer.status_code == 200, (path, answer.text[:300])
        assert Markup(answer.text).inline == [], path
    members = await client.get("/dashboard/members")
    # The address is the question's text, never code.
    confirms = Markup(members.text).confirms
    assert f"Remove {payloads.MEMBER_IN_A_STRING}?" in confirms
    assert f"Remove {payloads.MEMBER_IN_MARKUP}?" in confirms
    created = await client.post(
        "/dashboard/api-keys", data={"csrf": csrf_of(members), "name": KEY_NAME}
    )
    assert created.status_code == 201 and Markup(created.text).inline == []
    keys = Markup((await client.get("/dashboard/api-keys")).text)
    assert keys.confirms == ["Revoke this key? Requests with it fail at once."] * 2


@pytest.mark.parametrize("images", [False, True])
async def test_received_mail_is_framed_with_a_policy_of_its_own(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, images: bool
) -> None:
    html = payloads.mail_html("frame", "http://198.51.100.7")
    received_id = await add_received(context, tenant.team_id, html)
    await sign_in(client, await add_member(context, tenant, Role.VIEW_ONLY))
    answer = await client.get(
        f"/dashboard/received/{received_id}", params={"images": "1"} if images else {}
    )
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == (MAIL_IMAGES if images else MAIL_BLOCKED)
    [frame] = Markup(answer.text).frames
    # The frame's own policy comes first in its document (after the doctype): nothing
    # the mail says before it can load anything.
    assert frame == "<!DOCTYPE html>" + (FRAME_IMAGES if images else FRAME_BLOCKED) + html[15:]
    if images:
        assert f'href="/dashboard/received/{received_id}">Block them</a>' in answer.text
    else:
        assert 'name="images" value="1">Load images</button>' in answer.text


async def test_the_teams_own_mail_shows_its_images(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    domain = await add_domain(context, tenant.team_id)
    seeded = await payloads.seed(client, tenant.headers, domain.name)
    await sign_in(client, await add_member(context, tenant, Role.VIEW_ONLY))
    answer = await client.get(f"/dashboard/templates/{seeded.template}")
    assert answer.headers["content-security-policy"] == MAIL_IMAGES
    [frame] = Markup(answer.text).frames
    assert frame.startswith("<!DOCTYPE html>" + FRAME_IMAGES + "<html>")
