"""Hostile form posts against every route of the dashboard: the signed-in owner of team
A, with a valid CSRF token, posts control characters, lone surrogates, huge and empty
values and team B's ids in the path. Every answer is an HTML page or a redirect below
500 — never a 500 — and team B's rows are exactly as they were. The sign-in and
invitation forms, open to anybody, get the same treatment without a session."""

from __future__ import annotations

import re
import uuid
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from mailbridge.clock import SystemClock
from mailbridge.dashboard import routes
from mailbridge.services.accounts import Role, add_team_member
from mailbridge.storage.tables import Team
from tests.fuzz.test_hostile_json import World, hostile_text, team_rows, world  # noqa: F401

EXAMPLES_PER_ROUTE = 25
PARAM = re.compile(r"\{([a-z_]+)\}")
FIELDS = [
    "name", "permission", "domain", "email", "role", "password", "team", "next", "csrf",
    "to", "text", "assignee", "email_id", "thread_id", "folder",
]  # fmt: skip
POSTS = sorted(path for method, path in routes() if method == "POST")


def _encoded(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def _form(fields: dict[str, str]) -> bytes:
    return "&".join(f"{name}={_encoded(value)}" for name, value in fields.items()).encode()


async def _owner_session(place: World) -> str:
    """A session of its own (signing out must not end the other tests' session)."""
    async with place.database.session() as session:
        team = await session.scalar(select(Team).where(Team.name == "a"))
        assert team is not None
        _member, token = await add_team_member(
            session, SystemClock(), team, f"fuzz-{uuid.uuid4().hex[:8]}@a-shop.io", Role.OWNER
        )
    return token


def test_every_form_route_is_fuzzed() -> None:
    assert "/dashboard/api-keys" in POSTS and "/dashboard/login" in POSTS, POSTS


@pytest.mark.parametrize("path", POSTS)
def test_hostile_forms_never_fail_the_server_nor_touch_another_team(
    world: World,  # noqa: F811
    path: str,
) -> None:
    before = world.run(team_rows(world.database, world.b_team))
    token = world.run(_owner_session(world))
    signed_in = not path.startswith(("/dashboard/login", "/dashboard/invitations"))
    cookie = {"cookie": f"mb_session={token}"}
    page = world.run(world.client.get("/dashboard/api-keys", headers=cookie))
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    csrf = found.group(1)

    @settings(
        max_examples=EXAMPLES_PER_ROUTE, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )  # fmt: skip
    @given(
        fields=st.dictionaries(st.sampled_from(FIELDS), hostile_text, max_size=5),
        keep_csrf=st.booleans(),
        ids=st.lists(
            st.one_of(st.sampled_from(world.b_ids), hostile_text.filter(lambda s: "/" not in s)),
            min_size=2,
            max_size=2,
        ),
    )
    def attack(fields: dict[str, str], keep_csrf: bool, ids: list[str]) -> None:
        names = iter(ids)
        url = PARAM.sub(lambda _m: _encoded(next(names)) or "x", path)
        if keep_csrf and signed_in:
            fields = {**fields, "csrf": csrf}
        response = world.run(
            world.client.post(
                url, content=_form(fields),
                headers={"content-type": "application/x-www-form-urlencoded",
                         **(cookie if signed_in else {})},
            )
        )  # fmt: skip
        assert response.status_code < 500, (url, fields, response.text[:300])

    attack()
    assert world.run(team_rows(world.database, world.b_team)) == before
