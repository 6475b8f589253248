"""The dashboard over HTTP: signing in and out, the session cookie, CSRF on every form,
the sign-in rate limits, keys and members managed from the pages, and view-only members
refused by the server whatever the page shows."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from mailbridge.dashboard import routes
from mailbridge.dashboard._sign_in_limits import SignInLimiter
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.accounts._teams import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.members import _sign_in as sign_ins
from mailbridge.storage.tables import ApiKey, Member
from tests.integration.conftest import Tenant, Tenants, bearer

PASSWORD = "a long enough password"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def add_member(context: ServiceContext, tenant: Tenant, role: Role) -> str:
    """A member of ``tenant`` who signs in with PASSWORD; their email."""
    email = f"{role.value}-{uuid.uuid4().hex[:6]}@corp.io"
    async with context.database.session() as session:
        team = await teams.resolve_team(session, tenant.team_id)
        await teams.add_team_member(
            session, context.clock, team, email, role, await sign_ins.hash_password(PASSWORD)
        )
    return email


def csrf_of(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    assert found is not None, page.text[:500]
    return found.group(1)


async def sign_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    """Sign in through the form; the CSRF token of the next page."""
    form = await client.get("/dashboard/login")
    answer = await client.post(
        "/dashboard/login",
        data={"email": email, "password": password, "csrf": csrf_of(form)},
    )
    assert answer.status_code == 303, answer.text[:500]
    overview = await client.get("/dashboard")
    assert overview.status_code == 200
    return csrf_of(overview)


async def key_count(context: ServiceContext, team_id: str) -> int:
    async with context.database.session() as session:
        return int(
            await session.scalar(
                select(func.count()).select_from(ApiKey).where(ApiKey.team_id == team_id)
            )
            or 0
        )


async def test_pages_ask_to_sign_in_first(client: httpx.AsyncClient) -> None:
    answer = await client.get("/dashboard/emails?status=sent")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/login?next=/dashboard/emails%3Fstatus%3Dsent"


async def test_signing_in_sets_a_strict_cookie_and_signing_out_revokes_the_session(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.OWNER)
    form = await client.get("/dashboard/login")
    wrong = await client.post(
        "/dashboard/login",
        data={"email": email, "password": "not it at all", "csrf": csrf_of(form)},
    )
    assert wrong.status_code == 401 and "Wrong email or password" in wrong.text
    assert "mb_session" not in client.cookies

    answer = await client.post(
        "/dashboard/login",
        data={"email": email.upper(), "password": PASSWORD, "csrf": csrf_of(wrong),
              "next": "https://evil.example/steal"},
    )  # fmt: skip
    assert answer.status_code == 303 and answer.headers["location"] == "/dashboard"
    cookie = answer.headers["set-cookie"]
    assert "mb_session=mbs_" in cookie and "HttpOnly" in cookie
    assert "SameSite=lax" in cookie and "Path=/dashboard" in cookie and "Secure" not in cookie
    token = client.cookies["mb_session"]
    assert (await client.get("/api-keys", headers=bearer(token))).status_code == 200

    overview = await client.get("/dashboard")
    assert overview.status_code == 200 and email in overview.text
    out = await client.post("/dashboard/logout", data={"csrf": csrf_of(overview)})
    assert out.status_code == 303
    # The session is revoked, not only forgotten by this browser.
    gone = await client.get("/api-keys", headers=bearer(token))
    assert gone.status_code == 403 and gone.json()["name"] == "invalid_api_key"
    client.cookies.set("mb_session", token, path="/dashboard")
    assert (await client.get("/dashboard")).status_code == 303


async def test_the_cookie_is_secure_over_tls(
    app: FastAPI, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.ADMIN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mailbridge.test") as tls:
        form = await tls.get("/dashboard/login")
        answer = await tls.post(
            "/dashboard/login", data={"email": email, "password": PASSWORD, "csrf": csrf_of(form)}
        )
    assert answer.status_code == 303 and "Secure" in answer.headers["set-cookie"]


async def test_signing_in_without_the_forms_csrf_token_is_refused(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.OWNER)
    await client.get("/dashboard/login")
    for token in ("", "0" * 64):
        answer = await client.post(
            "/dashboard/login", data={"email": email, "password": PASSWORD, "csrf": token}
        )
        assert answer.status_code == 403 and "invalid_csrf_token" in answer.text
    assert "mb_session" not in client.cookies


async def test_failed_sign_ins_slow_the_guesser_down_without_locking_the_owner_out(
    app: FastAPI, client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    now = [1000.0]
    app.state.sign_in_limiter = SignInLimiter(monotonic=lambda: now[0])
    email = await add_member(context, tenant, Role.OWNER)
    csrf = await sign_in(client, email)  # the owner's browser: a known device from now on
    await client.post("/dashboard/logout", data={"csrf": csrf})
    assert "mb_device" in client.cookies and "mb_session" not in client.cookies
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mailbridge.test") as guesser:
        statuses, waits = [], []
        for _ in range(7):
            form = await guesser.get("/dashboard/login")
            answer = await guesser.post(
                "/dashboard/login",
                data={"email": email, "password": "wrong guess!", "csrf": csrf_of(form)},
            )
            statuses.append(answer.status_code)
            waits.append(int(answer.headers.get("retry-after", "0")))
            if answer.status_code == 429:
                now[0] += waits[-1]  # the guesser waits it out, then guesses again
        # Five free failures; then 1 s to wait, waited out, another failure: 2 s...
        assert statuses == [401] * 5 + [429, 401]
        assert waits == [0] * 5 + [1, 0]
        form = await guesser.get("/dashboard/login")
        blocked = await guesser.post(
            "/dashboard/login", data={"email": email, "password": PASSWORD, "csrf": csrf_of(form)}
        )
        assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) == 2
    # The owner, from their own browser, signs in at once with the right password.
    csrf = await sign_in(client, email)
    await client.post("/dashboard/logout", data={"csrf": csrf})
    other = await add_member(context, tenant, Role.ADMIN)
    await sign_in(client, other)  # another account from the same address still may


def dashboard_posts() -> list[str]:
    """Every form route of the signed-in dashboard."""
    skipped = ("/dashboard/login", "/dashboard/invitations/{token}")
    return sorted(path for method, path in routes() if method == "POST" and path not in skipped)


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "01a2133e-0000-7000-8000-000000000000", path)


async def test_every_form_route_refuses_a_post_without_csrf(
    app: FastAPI, client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.OWNER)
    await sign_in(client, email)
    routes = dashboard_posts()
    assert "/dashboard/api-keys" in routes and "/dashboard/members/{member_id}/role" in routes
    before = await key_count(context, tenant.team_id)
    for path in routes:
        answer = await client.post(concrete(path), data={"name": "sneaky", "role": "owner"})
        assert answer.status_code == 403, path
        assert "invalid_csrf_token" in answer.text, path
    assert await key_count(context, tenant.team_id) == before


async def test_a_view_only_member_sees_the_pages_but_every_write_is_refused(
    app: FastAPI, client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.VIEW_ONLY)
    csrf = await sign_in(client, email)
    keys = await client.get("/dashboard/api-keys")
    assert keys.status_code == 200 and "disabled" in keys.text
    before = await key_count(context, tenant.team_id)
    forged = await client.post(
        "/dashboard/api-keys", data={"csrf": csrf, "name": "forged", "permission": "full_access"}
    )
    assert forged.status_code == 403 and "view_only_member" in forged.text
    assert await key_count(context, tenant.team_id) == before
    for path in dashboard_posts():
        if path == "/dashboard/logout":
            continue
        answer = await client.post(
            concrete(path), data={"csrf": csrf, "name": "x", "role": "owner"}
        )
        if path == "/dashboard/account/password":  # one's own: refused without the password
            assert answer.status_code == 422, answer.text[:300]
            continue
        # Refused for the role, or for an id that is not the team's: never done.
        assert answer.status_code in (403, 404), (path, answer.status_code)
        if answer.status_code == 403:
            assert "view_only_member" in answer.text or "validation_error" in answer.text, path
    token = client.cookies["mb_session"]
    direct = await client.post("/api-keys", json={"name": "forged"}, headers=bearer(token))
    assert direct.status_code == 403 and direct.json()["name"] == "view_only_member"


async def test_an_owner_creates_a_key_and_sees_its_token_once(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.OWNER)
    csrf = await sign_in(client, email)
    created = await client.post(
        "/dashboard/api-keys",
        data={"csrf": csrf, "name": "deploys", "permission": "sending_access"},
    )
    assert created.status_code == 201
    token = re.search(r"<code>(mb_[A-Za-z0-9_]+)</code>", created.text)
    assert token is not None
    sending = await client.get("/api-keys", headers=bearer(token.group(1)))
    assert sending.status_code == 401 and sending.json()["name"] == "restricted_api_key"
    again = await client.get("/dashboard/api-keys")
    assert "deploys" in again.text and token.group(1) not in again.text
    key_id = re.search(r'action="/dashboard/api-keys/([0-9a-f-]+)/revoke"', again.text)
    assert key_id is not None
    csrf = csrf_of(again)
    renamed = await client.post(
        f"/dashboard/api-keys/{key_id.group(1)}",
        data={"csrf": csrf, "name": "deploys-2", "permission": "full_access"},
    )
    assert renamed.status_code == 303
    assert (await client.get("/api-keys", headers=bearer(token.group(1)))).status_code == 200
    revoked = await client.post(
        f"/dashboard/api-keys/{key_id.group(1)}/revoke", data={"csrf": csrf}
    )
    assert revoked.status_code == 303
    gone = await client.get("/api-keys", headers=bearer(token.group(1)))
    assert gone.status_code == 403 and gone.json()["name"] == "invalid_api_key"


async def test_an_invitation_makes_a_member_once(
    client: httpx.AsyncClient, app: FastAPI, context: ServiceContext, tenant: Tenant
) -> None:
    owner = await add_member(context, tenant, Role.OWNER)
    csrf = await sign_in(client, owner)
    invited = await client.post(
        "/dashboard/members/invitations",
        data={"csrf": csrf, "email": "new@corp.io", "role": "admin"},
    )
    assert invited.status_code == 201
    link = re.search(r"https?://[^<\s]+/dashboard/invitations/([A-Za-z0-9_-]+)", invited.text)
    assert link is not None
    path = f"/dashboard/invitations/{link.group(1)}"

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mailbridge.test") as guest:
        form = await guest.get(path)
        assert form.status_code == 200 and "n…@corp.io" in form.text
        assert "new@corp.io" not in form.text  # the link alone does not tell whose it is
        data = {"csrf": csrf_of(form), "email": "new@corp.io"}
        short = await guest.post(path, data={**data, "password": "short"})
        assert short.status_code == 422
        other = await guest.post(path, data={**data, "email": "me@evil.io", "password": PASSWORD})
        assert other.status_code == 422 and "mb_session" not in guest.cookies
        joined = await guest.post(path, data={**data, "email": "New@corp.io", "password": PASSWORD})
        assert joined.status_code == 303 and "mb_session" in guest.cookies
        assert "new@corp.io" in (await guest.get("/dashboard")).text
        assert (await guest.get(path)).status_code == 404  # used
    async with context.database.session() as session:
        role = await session.scalar(
            select(Member.role).where(
                Member.team_id == tenant.team_id, Member.email == "new@corp.io"
            )
        )
    assert role == "admin"
    client.cookies.clear()
    await sign_in(client, "new@corp.io")


async def test_an_admin_cannot_invite_an_owner(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    admin = await add_member(context, tenant, Role.ADMIN)
    csrf = await sign_in(client, admin)
    answer = await client.post(
        "/dashboard/members/invitations",
        data={"csrf": csrf, "email": "boss@corp.io", "role": "owner"},
    )
    assert answer.status_code == 403 and "validation_error" in answer.text


@pytest.mark.parametrize(
    "path",
    ["", "/emails", "/domains", "/audiences", "/segments", "/templates", "/campaigns",
     "/automations", "/polls", "/webhooks", "/received", "/logs", "/api-keys", "/members"],
)  # fmt: skip
async def test_every_page_renders_for_a_new_team(
    client: httpx.AsyncClient, context: ServiceContext, tenants: Tenants, path: str
) -> None:
    tenant = await tenants.create()
    await sign_in(client, await add_member(context, tenant, Role.VIEW_ONLY))
    answer = await client.get(f"/dashboard{path}")
    assert answer.status_code == 200
    assert "<nav" in answer.text and "Sign out" in answer.text


async def test_the_logs_page_shows_each_requests_method_path_and_status(
    client: httpx.AsyncClient, context: ServiceContext, tenants: Tenants
) -> None:
    tenant = await tenants.create()
    await client.get("/missing-page", headers=tenant.headers)
    await sign_in(client, await add_member(context, tenant, Role.VIEW_ONLY))
    answer = await client.get("/dashboard/logs")
    assert answer.status_code == 200
    assert "GET /missing-page" in answer.text and "None" not in answer.text
    assert re.search(r'class="badge[^"]*"[^>]*>\s*404\s*<', answer.text), answer.text[-3000:]
