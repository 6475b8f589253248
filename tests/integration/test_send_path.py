"""The send routes' shortcut (mailbridge.api.send_path) answers exactly as the FastAPI routes.

Each body is sent twice: once answered by the shortcut, once with the shortcut stepped
over (its ``__call__`` patched to pass the request on), by the FastAPI route. Both must
give the same status, the same envelope and the same stored result.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mailbridge.api import send_path
from mailbridge.api.send_path import SendPath
from mailbridge.services.accounts._teams import Role
from tests.integration.sending import Sending, email
from tests.integration.test_auth import assert_error

BODIES: list[tuple[str, Any]] = [
    ("/emails", email()),
    ("/emails", email(to=["Ann <Ann@Corp.io>", "b@example.com"], cc="c@corp.io")),
    ("/emails", email(**{"from": "not an address"})),
    ("/emails", email(**{"from": "news@unknown.io"})),
    ("/emails", email(to=["ann@corp.io", "nope"])),
    ("/emails", email(to=["a@example.com"])),
    ("/emails", email(subject=None)),
    ("/emails", email(attachments=[{"filename": "a.txt", "content": "%%%"}])),
    ("/emails", email(scheduled_at="whenever pigs fly")),
    ("/emails", ["not", "an", "object"]),
    ("/emails", 42),
    ("/emails/batch", [email(), email(to=["carl@corp.io"])]),
    ("/emails/batch", [email(), email(to=["nope"])]),
    ("/emails/batch", []),
    ("/emails/batch", email()),
]


def _shape(response: httpx.Response) -> tuple[int, Any]:
    """Status and body, with the ids of new emails (random) replaced by their count."""
    body = response.json()
    if response.status_code == 200 and "id" in body:
        return 200, {"id": 1}
    if response.status_code == 200:
        return 200, {"data": len(body["data"])}
    return response.status_code, body


@pytest.fixture
def route_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each send the FastAPI route (not the shortcut) handled."""
    calls: list[str] = []
    original = send_path.answer_send

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append("route")
        return await original(*args, **kwargs)

    monkeypatch.setattr("mailbridge.api.routers.emails.answer_send", counted)
    return calls


async def _step_over(self: SendPath, scope: Any, receive: Any, send: Any) -> None:
    await self.app(scope, receive, send)


async def test_the_shortcut_and_the_route_answer_alike(
    sending: Sending, route_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for path, body in BODIES:
        short = await sending.client.post(path, json=body, headers=sending.tenant.headers)
        assert route_calls == [], (path, body)
        with monkeypatch.context() as patched:
            patched.setattr(SendPath, "__call__", _step_over)
            routed = await sending.client.post(path, json=body, headers=sending.tenant.headers)
        assert route_calls == ["route"], (path, body)
        route_calls.clear()
        assert _shape(short) == _shape(routed), (path, body)
        for name in ("ratelimit-limit", "ratelimit-remaining", "content-type"):
            assert (name in short.headers) == (name in routed.headers), name
    stored = await sending.emails()
    assert len(stored) == 2 * (2 + 2)  # two single sends and one batch of two, both ways


async def test_the_shortcut_takes_json_media_types_with_parameters(
    sending: Sending, route_calls: list[str]
) -> None:
    for content_type in (
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/x+json",
    ):
        response = await sending.client.post(
            "/emails", content=json.dumps(email()).encode(),
            headers={**sending.tenant.headers, "Content-Type": content_type},
        )  # fmt: skip
        assert response.status_code == 200, response.text
    assert route_calls == []


async def test_what_the_shortcut_cannot_read_gets_the_routes_answer(
    sending: Sending, route_calls: list[str]
) -> None:
    json_headers = {**sending.tenant.headers, "Content-Type": "application/json"}
    broken = await sending.client.post("/emails", content=b'{"from": ', headers=json_headers)
    assert_error(broken, 422, "validation_error")
    assert "not valid JSON" in broken.json()["message"]
    missing = await sending.client.post("/emails", content=b"", headers=json_headers)
    assert_error(missing, 422, "missing_required_field")
    null = await sending.client.post("/emails", content=b"null", headers=json_headers)
    assert_error(null, 422, "validation_error")
    text = await sending.client.post(
        "/emails", content=json.dumps(email()).encode(),
        headers={**sending.tenant.headers, "Content-Type": "text/plain"},
    )  # fmt: skip
    assert_error(text, 422, "validation_error")
    assert route_calls == ["route", "route"]  # null and text/plain reached the endpoint
    assert await sending.count() == 0


async def test_the_shortcut_keeps_the_callers_rights_and_the_request_log(
    sending: Sending,
) -> None:
    viewer = await sending.tenants.member(sending.tenant, Role.VIEW_ONLY)
    refused = await sending.client.post(
        "/emails", json=email(), headers={"Authorization": f"Bearer {viewer}"}
    )
    assert_error(refused, 403, "view_only_member")
    sent = await sending.send(email(), **{"Idempotency-Key": "order-1"})
    again = await sending.send(email(), **{"Idempotency-Key": "order-1"})
    assert sent.status_code == again.status_code == 200 and sent.json() == again.json()
    assert_error(await sending.send(email(), **{"Idempotency-Key": ""}), 400,
                 "invalid_idempotency_key")  # fmt: skip
    logs = (await sending.client.get("/logs", headers=sending.tenant.headers)).json()["data"]
    sends = [log for log in logs if log["endpoint"] == "/emails"]
    assert [log["response_status"] for log in sends] == [400, 200, 200, 403]  # newest first


async def test_a_permissive_batch_sends_the_good_emails_and_names_the_others(
    sending: Sending, route_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resend's `x-batch-validation: permissive`, by the shortcut and by the route alike:
    the emails that pass are sent, each other one is named by its index and why."""
    items = [
        email(),
        email(to=["nope"]),  # refused by the request model
        email(**{"from": "news@unknown.io"}),  # refused by the service: not our domain
        email(to=["carl@corp.io"]),
    ]
    permissive = {**sending.tenant.headers, "x-batch-validation": "permissive"}
    short = await sending.client.post("/emails/batch", json=items, headers=permissive)
    with monkeypatch.context() as patched:
        patched.setattr(SendPath, "__call__", _step_over)
        routed = await sending.client.post("/emails/batch", json=items, headers=permissive)
    assert route_calls == ["route"]
    for response in (short, routed):
        assert response.status_code == 200, response.text
        answer = response.json()
        assert len(answer["data"]) == 2
        assert [error["index"] for error in answer["errors"]] == [1, 2]
        assert "to" in answer["errors"][0]["message"]
        assert "unknown.io" in answer["errors"][1]["message"]
    stored = await sending.emails()
    assert sorted(e.id for e in stored) == sorted(
        item["id"] for response in (short, routed) for item in response.json()["data"]
    )

    # Nothing good: 200, nothing sent, every email named.
    none = await sending.client.post("/emails/batch", json=[email(to=["nope"])], headers=permissive)
    assert none.status_code == 200 and none.json()["data"] == []
    assert [error["index"] for error in none.json()["errors"]] == [0]
    assert len(await sending.emails()) == 4

    # Strict (the default, or said so) refuses the whole batch; another mode is a 422.
    for mode in (None, "strict", "STRICT"):
        headers = dict(sending.tenant.headers)
        if mode is not None:
            headers["x-batch-validation"] = mode
        strict = await sending.client.post("/emails/batch", json=items, headers=headers)
        assert strict.status_code == 422 and "emails[1]" in strict.json()["message"]
    odd = {**sending.tenant.headers, "x-batch-validation": "lenient"}
    assert_error(await sending.client.post("/emails/batch", json=items, headers=odd), 422,
                 "validation_error")  # fmt: skip
    assert len(await sending.emails()) == 4

    # The mode is part of what an idempotency key promises.
    keyed = {**permissive, "Idempotency-Key": "batch-1"}
    first = await sending.client.post("/emails/batch", json=items, headers=keyed)
    again = await sending.client.post("/emails/batch", json=items, headers=keyed)
    assert first.json() == again.json() and len(first.json()["errors"]) == 2
    strict_keyed = {**sending.tenant.headers, "Idempotency-Key": "batch-1"}
    reused = await sending.client.post("/emails/batch", json=items, headers=strict_keyed)
    assert_error(reused, 409, "invalid_idempotent_request")
