"""No way up: roles hold on every path, sessions follow the password, and every member
change is in an audit log only owners read (services/accounts, api/routers/members.py)."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
from fastapi import FastAPI
from sqlalchemy import select
from typer.testing import CliRunner

from mailbridge.cli.main import app as cli
from mailbridge.services import accounts, members
from mailbridge.services.accounts import Role
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Member, MemberSession
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_dashboard import PASSWORD, add_member, csrf_of, sign_in


async def api_session(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    """Sign in through the dashboard's form in a fresh cookie jar; the session token."""
    client.cookies.clear()
    await sign_in(client, email, password)
    token = client.cookies["mb_session"]
    client.cookies.clear()
    return token


async def member_id(context: ServiceContext, email: str) -> str:
    async with context.database.session() as session:
        found = await session.scalar(select(Member.id).where(Member.email == email))
    assert found is not None
    return found


async def works(client: httpx.AsyncClient, token: str) -> bool:
    return (await client.get("/members", headers=bearer(token))).status_code == 200


async def test_an_invitation_names_no_role_above_the_inviters(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant, tenants: Tenants
) -> None:
    admin = await api_session(client, await add_member(context, tenant, Role.ADMIN))
    viewer = await api_session(client, await add_member(context, tenant, Role.VIEW_ONLY))
    for token, role, status in ((admin, "owner", 403), (admin, "admin", 201),
                                (viewer, "view_only", 403)):  # fmt: skip
        answer = await client.post(
            "/members/invitations", json={"email": f"{role}@new.io", "role": role},
            headers=bearer(token),
        )  # fmt: skip
        assert answer.status_code == status, (role, answer.text)
    key = await client.post(
        "/members/invitations", json={"email": "k@new.io"}, headers=tenant.headers
    )
    assert key.status_code == 403 and key.json()["name"] == "dashboard_only"


async def test_member_changes_are_in_an_audit_log_only_owners_read(
    app: FastAPI, client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    owner_email = await add_member(context, tenant, Role.OWNER)
    owner = await api_session(client, owner_email)
    invited = await client.post(
        "/members/invitations", json={"email": "ann@new.io", "role": "admin"},
        headers=bearer(owner),
    )  # fmt: skip
    token = invited.json()["url"].rsplit("/", 1)[1]
    async with context.database.session() as session:
        joined, _session_token = await members.accept_invitation(
            session, context.clock, token, "ann@new.io", PASSWORD
        )
        await session.commit()
    changed = await client.patch(
        f"/members/{joined.id}", json={"role": "view_only"}, headers=bearer(owner)
    )
    assert changed.status_code == 200
    removed = await client.delete(f"/members/{joined.id}", headers=bearer(owner))
    assert removed.status_code == 200
    log = await client.get("/members/audit", headers=bearer(owner))
    assert log.status_code == 200
    events = [(e["actor"], e["action"], e["subject"]) for e in reversed(log.json()["data"])]
    assert events == [
        (owner_email, "member.invited", "ann@new.io"),
        ("ann@new.io", "invitation.accepted", "ann@new.io"),
        (owner_email, "member.role_changed", "ann@new.io"),
        (owner_email, "member.removed", "ann@new.io"),
    ]
    assert log.json()["data"][1]["data"] == {"old": "admin", "new": "view_only"}
    admin = await api_session(client, await add_member(context, tenant, Role.ADMIN))
    refused = await client.get("/members/audit", headers=bearer(admin))
    assert refused.status_code == 403
    assert (await client.get("/members/audit", headers=tenant.headers)).status_code == 403


async def test_a_password_change_ends_every_other_session(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.VIEW_ONLY)
    laptop, phone, tablet = [await api_session(client, email) for _ in range(3)]
    me = await member_id(context, email)
    listed = await client.get(f"/members/{me}/sessions", headers=bearer(laptop))
    # Three signed in, and the one add_member opened (the API's member credential).
    assert listed.status_code == 200 and len(listed.json()["data"]) == 4
    assert [s["current"] for s in listed.json()["data"]].count(True) == 1
    wrong = await client.post(
        "/members/me/password", json={"current_password": "not it at all", "password": "x" * 12},
        headers=bearer(laptop),
    )  # fmt: skip
    assert wrong.status_code == 422 and await works(client, phone)
    changed = await client.post(
        "/members/me/password",
        json={"current_password": PASSWORD, "password": "a brand new password"},
        headers=bearer(laptop),
    )
    assert changed.status_code == 200 and changed.json()["sessions_revoked"] == 3
    assert await works(client, laptop)
    assert not await works(client, phone) and not await works(client, tablet)
    await api_session(client, email, "a brand new password")


async def test_a_password_reset_ends_every_session(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.ADMIN)
    tokens = [await api_session(client, email) for _ in range(2)]
    async with context.database.session() as session:
        found = await session.scalar(select(Member).where(Member.email == email))
        assert found is not None
        ended = await members.set_password(session, context.clock, found, "reset by ops!")
    assert ended == 3  # the two signed in, and the one add_member opened
    accounts.principal_cache(context).clear()  # the API process sees it within its cache's second
    assert [await works(client, token) for token in tokens] == [False, False]


async def test_sessions_are_revoked_one_by_one_by_their_member_or_a_manager(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    owner_email = await add_member(context, tenant, Role.OWNER)
    owner = await api_session(client, owner_email)
    admin = await api_session(client, await add_member(context, tenant, Role.ADMIN))
    viewer_email = await add_member(context, tenant, Role.VIEW_ONLY)
    viewer, spare = [await api_session(client, viewer_email) for _ in range(2)]
    viewer_id = await member_id(context, viewer_email)
    owner_id = await member_id(context, owner_email)
    # An admin cannot see or end an owner's sessions; a view-only member no one else's.
    seen = await client.get(f"/members/{owner_id}/sessions", headers=bearer(admin))
    assert seen.status_code == 403
    owners = (await client.get(f"/members/{owner_id}/sessions", headers=bearer(owner))).json()
    for token in (admin, viewer):
        answer = await client.delete(
            f"/members/sessions/{owners['data'][0]['id']}", headers=bearer(token)
        )
        assert answer.status_code == 403
    assert await works(client, owner)
    # The admin ends the viewer's spare session; the viewer ends their own.
    spares = (await client.get(f"/members/{viewer_id}/sessions", headers=bearer(spare))).json()
    [spare_id] = [row["id"] for row in spares["data"] if row["current"]]
    ended = await client.delete(f"/members/sessions/{spare_id}", headers=bearer(admin))
    assert ended.status_code == 200
    assert await works(client, viewer) and not await works(client, spare)
    own = (await client.get(f"/members/{viewer_id}/sessions", headers=bearer(viewer))).json()
    [mine] = [row["id"] for row in own["data"] if row["current"]]
    bye = await client.delete(f"/members/sessions/{mine}", headers=bearer(viewer))
    assert bye.status_code == 200 and not await works(client, viewer)


async def test_the_operator_revokes_every_session_of_a_member(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.OWNER)
    tokens = [await api_session(client, email) for _ in range(2)]
    async with context.database.session() as session:
        team = await teams.resolve_team(session, tenant.team_id)
    env = {"MAILBRIDGE_DATABASE_URL": context.settings.resolved_database_url}
    if context.settings.database_schema:
        env["MAILBRIDGE_DATABASE_SCHEMA"] = context.settings.database_schema
    args = ["admin", "members", "sessions"]
    listed = await asyncio.to_thread(
        CliRunner().invoke, cli, [*args, "list", "--email", email, "--team", team.name], env=env
    )
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.stdout)["data"]) == 3  # with add_member's
    revoked = await asyncio.to_thread(
        CliRunner().invoke, cli, [*args, "revoke", "--email", email, "--team", team.name], env=env
    )
    assert revoked.exit_code == 0, revoked.output
    assert json.loads(revoked.stdout)["sessions_revoked"] == 3
    accounts.principal_cache(context).clear()  # the API process sees it within its cache's second
    assert [await works(client, token) for token in tokens] == [False, False]
    async with context.database.session() as session:
        open_rows = await session.scalars(
            select(MemberSession.id).where(MemberSession.revoked_at.is_(None))
        )
        assert open_rows.all() == []


async def test_the_dashboard_lists_sessions_and_changes_the_password(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    email = await add_member(context, tenant, Role.VIEW_ONLY)
    other = await api_session(client, email)
    csrf = await sign_in(client, email)
    account = await client.get("/dashboard/account")
    assert account.status_code == 200 and "(this one)" in account.text
    assert account.text.count("/revoke") == 3  # this one, the other, add_member's
    changed = await client.post(
        "/dashboard/account/password",
        data={"csrf": csrf_of(account), "current_password": PASSWORD,
              "password": "a brand new password"},
    )  # fmt: skip
    assert changed.status_code == 303 and "2+other+sessions+ended" in changed.headers["location"]
    assert not await works(client, other)
    after = await client.get("/dashboard/account")
    assert after.status_code == 200 and after.text.count("/revoke") == 1
    revoke = await client.post(
        f"/dashboard/sessions/{_session_ids(after.text)[0]}/revoke",
        data={"csrf": csrf_of(after), "back": "https://evil.io"},
    )
    assert revoke.status_code == 303 and revoke.headers["location"] == "/dashboard/account"
    assert (await client.get("/dashboard/account")).status_code == 303  # signed out: it was ours
    assert csrf


def _session_ids(page: str) -> list[str]:
    return re.findall(r'action="/dashboard/sessions/([0-9a-f-]+)/revoke"', page)


async def test_owners_read_the_audit_log_and_managers_a_members_sessions_in_the_dashboard(
    client: httpx.AsyncClient, context: ServiceContext, tenant: Tenant
) -> None:
    owner = await add_member(context, tenant, Role.OWNER)
    admin = await add_member(context, tenant, Role.ADMIN)
    csrf = await sign_in(client, owner)
    changed = await client.post(
        f"/dashboard/members/{await member_id(context, admin)}/role",
        data={"csrf": csrf, "role": "view_only"},
    )
    assert changed.status_code == 303
    members = await client.get("/dashboard/members")
    assert 'href="/dashboard/members/audit"' in members.text
    audit = await client.get("/dashboard/members/audit")
    assert audit.status_code == 200 and "member.role_changed" in audit.text and admin in audit.text
    sessions = await client.get(f"/dashboard/members/{await member_id(context, admin)}/sessions")
    assert sessions.status_code == 200 and f"Sessions of {admin}" in sessions.text
    assert sessions.text.count("/revoke") == 1  # the one add_member opened
    await client.post("/dashboard/logout", data={"csrf": csrf_of(sessions)})
    await sign_in(client, admin)  # now view-only
    assert 'href="/dashboard/members/audit"' not in (await client.get("/dashboard/members")).text
    refused = await client.get("/dashboard/members/audit")
    assert refused.status_code == 403
