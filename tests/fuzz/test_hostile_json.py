"""Hostile JSON against every write route (issue 2 of 7, Must have 5).

Team A sends what a careless or hostile client might: lone surrogates, control
characters, huge numbers, deep nesting, duplicate keys, wrong types, and ids of team
B's resources in the path. Every answer is a success or the spec's envelope with a 4xx
of spec §7 — never a 500 — and team B's rows are exactly as they were.

Bounded: a fixed number of examples per route (about a minute in all, on SQLite: the
integration tier runs every route on both databases already).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from mailbridge.api.app import create_app
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.errors import ApiError
from mailbridge.services.accounts import Role, add_team_member, create_api_key, create_team
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Base

EXAMPLES_PER_ROUTE = 50
USER_AGENT = "mailbridge-fuzz/1.0"


def _subclasses(cls: type[ApiError]) -> Iterator[type[ApiError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


# Every name the API answers with (spec §7 and DESIGN §6).
ERROR_NAMES = {getattr(cls, "name", None) for cls in _subclasses(ApiError)} - {None}
# Conflict's own names (``Conflict("inbox_exists", ...)``), read off the code so that a new
# one is known here the day it is written.
ERROR_NAMES |= {
    name
    for source in (Path(__file__).parents[2] / "mailbridge").rglob("*.py")
    for name in re.findall(r'Conflict\(\s*"([a-z_]+)"', source.read_text())
}


# -- hostile values -----------------------------------------------------------------------

HOSTILE_CHARACTERS = st.sampled_from(
    ["\ud83d", "\udc00", "\x00", "\r\n", "\n", "\x07", "\x1b", "\u2028", "\ufeff", "é", "🙂"]
)
hostile_text = st.one_of(
    st.text(max_size=30),
    st.lists(st.one_of(st.text(max_size=5), HOSTILE_CHARACTERS), max_size=6).map("".join),
    st.sampled_from(["", " ", "²", "\u0665", "5_0", "+5", "-1", "0" * 400, "a" * 5000]),
)
hostile_numbers = st.one_of(
    st.integers(), st.integers(min_value=10**18, max_value=10**60), st.floats(allow_nan=False)
)
leaves = st.one_of(st.none(), st.booleans(), hostile_numbers, hostile_text)
hostile_values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def hostile_bodies(draw: st.DrawFn, template: dict[str, Any]) -> bytes:
    """A raw JSON body: the route's plausible body with a field spoiled, a whole
    hostile value, deep nesting or duplicate keys."""
    kind = draw(st.sampled_from(["spoiled", "value", "deep", "duplicate", "not json"]))
    if kind == "spoiled" and template:
        body = dict(template)
        field = draw(st.sampled_from(sorted(body)))
        body[field] = draw(hostile_values)
        return json.dumps(body).encode()
    if kind == "deep":
        depth = draw(st.sampled_from([63, 65, 500, 3000]))
        return b'{"a":' * depth + b"1" + b"}" * depth
    if kind == "duplicate" and template:
        field = draw(st.sampled_from(sorted(template)))
        value = json.dumps(draw(hostile_values))
        return json.dumps(template)[:-1].encode() + f', "{field}": {value}}}'.encode()
    if kind == "not json":
        return draw(st.sampled_from([b"", b"null", b"{", b"\xff\xfe", b"[1,]", b"NaN"]))
    return json.dumps(draw(hostile_values)).encode()


# -- one app, two teams -------------------------------------------------------------------


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    client: httpx.AsyncClient
    database: Database
    a_headers: dict[str, str]
    b_team: str
    b_ids: list[str]
    a_member_headers: dict[str, str]  # a member session: what the dashboard-only routes take

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)


TEMPLATES: dict[str, dict[str, Any]] = {
    "/emails": {"from": "A <a@a-shop.io>", "to": ["x@corp.io"], "subject": "s", "html": "h"},
    "/domains": {"name": "fuzz.io"},
    "/audiences": {"name": "n"},
    "/contacts": {"email": "c@corp.io", "first_name": "f", "properties": {"p": 1}},
    "/contact-properties": {"key": "k", "type": "string"},
    "/segments": {"name": "s", "filter": {"type": "rule", "field": "email"}},
    "/topics": {"name": "t", "default_subscription": "opt_in"},
    "/templates": {"name": "t", "subject": "s", "html": "<p>{{{X}}}</p>"},
    "/polls": {
        "question": "q?",
        "options": ["a", "b"],
        "closes_at": "2999-01-01T00:00:00Z",
        "allow_change": True,
        "closed": False,
    },
    "/automations": {"name": "a", "domain": "a-shop.io", "steps": [], "connections": []},
    "/events": {"name": "e", "schema": {"f": "string"}},
    "/events/send": {"event": "e", "email": "c@corp.io", "payload": {}},
    "/webhooks": {"endpoint": "http://127.0.0.1:9/a", "events": ["email.sent"]},
    "/suppressions": {"emails": ["s@corp.io"]},
    "/campaigns": {
        "name": "c",
        "from": "A <a@a-shop.io>",
        "subject": "s",
        "html": "h",
        "recurrence": "FREQ=DAILY",
        "batch_size_per_day": 10,
        "ab": {"metric": "open", "variants": [{"subject": "a"}, {"subject": "b"}]},
    },
    "/broadcasts": {
        "name": "c",
        "from": "A <a@a-shop.io>",
        "subject": "s",
        "html": "h",
        "send": True,
        "scheduled_at": "in 1 hour",
    },
    "/campaigns//send": {"scheduled_at": "in 1 hour", "schedule_timezone": "Europe/Berlin"},
    "/inboxes": {"email_address": "help@a-shop.io", "name": "n", "from_name": "f"},
    "/inboxes//labels": {"name": "l", "color": "#AABBCC"},
    "/inboxes//threads": {"read": True, "folder": "archive"},
    "/inboxes//threads//labels": {"labels": []},
    "/inboxes//threads//emails//reply": {"text": "t", "reply_all": True},
    "/inboxes//threads//emails//forward": {"to": ["x@corp.io"], "text": "t"},
    "/inboxes//drafts": {"to": ["x@corp.io"], "subject": "s", "text": "t", "attachments": []},
    "/inboxes//agent": {"instructions": "i", "tone": "concise_casual", "actions": []},
}


def template_for(path: str) -> dict[str, Any]:
    for prefix in sorted(TEMPLATES, key=len, reverse=True):
        if path.startswith(prefix):
            return TEMPLATES[prefix]
    return {}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    url = f"sqlite+aiosqlite:///{folder / 'mailbridge.db'}"
    upgrade(url)
    loop = asyncio.new_event_loop()
    stack = AsyncExitStack()
    config = Settings(
        data_dir=folder, database_url=url, send_rate_limit="1000000/minute",
        # Nothing leaves the machine: webhook targets are not resolved, DNS goes nowhere.
        webhook_allow_private=True, dns_nameserver="127.0.0.1:9",
    )  # fmt: skip
    database = Database.from_settings(config)
    context = ServiceContext(settings=config, database=database, clock=SystemClock())

    async def setup() -> World:
        app = create_app(context=context)
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://mailbridge.test",
                headers={"User-Agent": USER_AGENT},
            )
        )
        async with database.session() as session:
            team_a = await create_team(session, context.clock, "a", "pro")
            _key, a_token = await create_api_key(session, context.clock, team_a.id, "a")
            _member, a_session = await add_team_member(
                session, context.clock, team_a, "owner@a-shop.io", Role.OWNER
            )
            team_b = await create_team(session, context.clock, "b", "pro")
            b_key, b_token = await create_api_key(session, context.clock, team_b.id, "b")
        for team, name in ((team_a.id, "a-shop.io"), (team_b.id, "b-shop.io")):
            async with database.session() as session:
                await create_domain(
                    session, context.clock, config, team, name, DomainOptions(receiving=True),
                    verified=True,
                )  # fmt: skip
        b = {"Authorization": f"Bearer {b_token}"}
        ids: list[str] = [b_key.id]
        for path, body in (
            ("/audiences", {"name": "B"}), ("/contacts", {"email": "b@corp.io"}),
            ("/templates", {"name": "B", "html": "<p>b</p>"}),
            ("/topics", {"name": "B", "default_subscription": "opt_in"}),
            ("/polls", {"question": "B?", "options": ["yes", "no"]}),
            ("/events", {"name": "b.event"}), ("/segments", {"name": "B"}),
            ("/campaigns", {"name": "B", "subject": "b"}),
            ("/webhooks", {"endpoint": "http://127.0.0.1:9/b", "events": ["email.sent"]}),
            ("/emails", {"from": "B <b@b-shop.io>", "to": ["y@corp.io"], "subject": "s",
                         "html": "h", "scheduled_at": "in 1 day"}),
            ("/inboxes", {"email_address": "in@b-shop.io"}),
            ("/inboxes/in@b-shop.io/labels", {"name": "B"}),
            ("/inboxes/in@b-shop.io/drafts", {"to": "b@corp.io", "text": "B"}),
        ):  # fmt: skip
            response = await client.post(path, json=body, headers=b)
            assert response.status_code in (200, 201), (path, response.text)
            ids.append(str(response.json()["id"]))
        ids.append("in@b-shop.io")  # an inbox is named by its address too
        async with database.session() as session:
            domains = await session.execute(select(Base.metadata.tables["domains"].c.id))
            ids.extend(str(row[0]) for row in domains)
        return World(loop, client, database, {"Authorization": f"Bearer {a_token}"},
                     team_b.id, ids, {"Authorization": f"Bearer {a_session}"})  # fmt: skip

    try:
        yield loop.run_until_complete(setup())
    finally:
        loop.run_until_complete(stack.aclose())
        loop.run_until_complete(database.dispose())
        loop.close()


async def team_rows(database: Database, team_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table that belongs to ``team_id`` (the request log aside)."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    async with database.session() as session:
        for table in Base.metadata.sorted_tables:
            if "team_id" not in table.c or table.name in ("request_logs", "activity_events"):
                continue
            # last_used_at is stamped when the request log flushes B's own setup calls
            columns = [column for column in table.c if column.name != "last_used_at"]
            found = await session.execute(select(*columns).where(table.c.team_id == team_id))
            rows[table.name] = sorted(map(tuple, found.all()), key=repr)
    return rows


def write_routes() -> list[tuple[str, str]]:
    """Every route of the OpenAPI document that writes (the signed links of sent mail
    aside: their token is the key)."""
    app = create_app(context=ServiceContext.from_settings(Settings(data_dir=Path("/nonexistent"))))
    return sorted(
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        if not path.startswith("/t/")
        for method in operations
        if method in ("post", "put", "patch", "delete")
    )


ROUTES = write_routes()
PARAM = re.compile(r"\{([a-z_]+)\}")


def test_every_write_route_is_fuzzed() -> None:
    assert len(ROUTES) > 40, ROUTES


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_hostile_json_never_fails_the_server_nor_touches_another_team(
    world: World, method: str, path: str
) -> None:
    before = world.run(team_rows(world.database, world.b_team))
    template = template_for(PARAM.sub("", path).rstrip("/"))

    @settings(
        max_examples=EXAMPLES_PER_ROUTE, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )  # fmt: skip
    @given(
        body=hostile_bodies(template),
        ids=st.lists(
            st.one_of(st.sampled_from(world.b_ids), hostile_text.filter(lambda s: "/" not in s)),
            min_size=3,
            max_size=3,
        ),
    )
    def attack(body: bytes, ids: list[str]) -> None:
        names = iter(ids)

        def fill(_: re.Match[str]) -> str:
            return quote(next(names).encode("utf-8", "surrogatepass"), safe="") or "x"

        url = PARAM.sub(fill, path)
        # Keys and members are the dashboard's (an API key only ever hears 403 dashboard_only).
        auth = (
            world.a_member_headers
            if path.startswith(("/api-keys", "/members"))
            else world.a_headers
        )
        response = world.run(
            world.client.request(
                method, url, content=body, headers={**auth, "Content-Type": "application/json"},
            )
        )  # fmt: skip
        assert response.status_code < 500, (method, url, body[:300], response.text[:300])
        if response.status_code >= 400:
            envelope = response.json()
            assert envelope["statusCode"] == response.status_code
            assert envelope["name"] in ERROR_NAMES, envelope
            assert isinstance(envelope["message"], str) and envelope["message"]

    attack()
    assert world.run(team_rows(world.database, world.b_team)) == before
