"""Every request's id: the caller's when sane, bound to the log context while it runs."""

from __future__ import annotations

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from structlog.contextvars import bind_contextvars, clear_contextvars, get_contextvars

from mailbridge.api.request_ids import RequestIds

seen: list[dict[str, object]] = []


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    bind_contextvars(team_id="team-1")  # as ApiMiddleware does
    seen.append(get_contextvars())
    await send({"type": "http.response.start", "status": 204, "headers": [(b"x-a", b"1")]})
    await send({"type": "http.response.body", "body": b""})


async def call(headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=RequestIds(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.get("/", headers=headers)


@pytest.mark.parametrize(
    ("given", "kept"),
    [("abc-123.x:y_z", True), ("a" * 64, True), ("a" * 65, False), ("has space", False),
     ("", False), ("<script>", False)],
)  # fmt: skip
async def test_a_sane_id_is_kept_else_a_new_one(given: str, kept: bool) -> None:
    clear_contextvars()
    seen.clear()
    answer = await call({"X-Request-Id": given} if given else {})
    rid = answer.headers["x-request-id"]
    assert answer.headers["x-a"] == "1"
    assert (rid == given) is kept
    if not kept:
        assert len(rid) == 32 and int(rid, 16) >= 0
    assert seen == [{"request_id": rid, "team_id": "team-1"}]
    assert get_contextvars() == {}  # nothing left behind for the next request


async def test_each_request_gets_its_own_id() -> None:
    first, second = await call({}), await call({})
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
