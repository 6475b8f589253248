"""Every limit answers in the envelope, before the work is done (issue 2 of 7): body size,
JSON nesting, lone surrogates on every JSON route, ASCII-only numbers in paths and
queries. Each case here was once a 500 with a traceback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from mailbridge.config import Settings
from tests.integration.conftest import Tenant
from tests.integration.test_auth import assert_error

LIMIT = 256 * 1024
JSON_ROUTES = [
    ("POST", "/emails"), ("POST", "/emails/batch"), ("POST", "/domains"),
    ("POST", "/audiences"), ("POST", "/contacts"), ("POST", "/contacts/batch"),
    ("POST", "/contact-properties"), ("POST", "/segments"), ("POST", "/topics"),
    ("POST", "/templates"), ("POST", "/automations"), ("POST", "/events"),
    ("POST", "/events/send"), ("POST", "/webhooks"), ("POST", "/suppressions"),
]  # fmt: skip


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize(("method", "path"), JSON_ROUTES)
async def test_deep_nesting_is_refused_on_every_json_route(
    client: httpx.AsyncClient, tenant: Tenant, method: str, path: str
) -> None:
    for depth in (65, 2000):
        response = await client.request(
            method, path, content=nested(depth),
            headers={**tenant.headers, "Content-Type": "application/json"},
        )  # fmt: skip
        assert_error(response, 422, "validation_error")
        assert "nested deeper than 64" in response.json()["message"]
    shallow = await client.request(
        method, path, content=b"[" * 3 + b"]" * 3,
        headers={**tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert shallow.status_code < 500


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/templates", {"name": "t\ud83d", "html": "<p>x</p>"}),
        ("/templates", {"name": "t", "html": "<p>\udc00</p>"}),
        ("/events", {"name": "signed.up", "schema": {"plan\ud83d": "string"}}),
        ("/events/send", {"event": "e\ud83d", "email": "ann@corp.io"}),
        ("/contacts", {"email": "ann@corp.io", "first_name": "\ud83d"}),
    ],
)
async def test_a_lone_surrogate_is_refused_naming_where(
    client: httpx.AsyncClient, tenant: Tenant, path: str, body: dict[str, object]
) -> None:
    response = await client.post(
        path, content=json.dumps(body).encode(),
        headers={**tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert_error(response, 422, "validation_error")
    assert "surrogate" in response.json()["message"]


async def test_a_surrogate_pair_is_a_character_not_a_problem(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = json.dumps({"name": "smile \U0001f642"}).encode()  # escaped as \ud83d\ude42
    assert b"\\ud83d\\ude42" in body
    response = await client.post(
        "/audiences", content=body,
        headers={**tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "smile \U0001f642"


async def test_a_body_over_the_limit_is_refused_by_its_length(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    html = "x" * (LIMIT + 1)
    body = {"from": "a@shop.io", "to": ["b@corp.io"], "subject": "s", "html": html}
    response = await client.post("/emails", json=body, headers=tenant.headers)
    assert_error(response, 413, "payload_too_large")


async def test_a_streamed_body_is_refused_before_it_is_all_read(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    chunks_sent = 0

    async def stream() -> AsyncIterator[bytes]:
        nonlocal chunks_sent
        for _ in range(64):  # 4 MiB in all, 16x the limit
            chunks_sent += 1
            yield b"x" * (64 * 1024)

    response = await client.post(
        "/emails", content=stream(),
        headers={**tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert_error(response, 413, "payload_too_large")
    assert chunks_sent < 64


async def test_a_body_at_the_limit_goes_on_to_the_route(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = json.dumps({"name": "n" * (LIMIT - 100)})
    body += " " * (LIMIT - len(body))
    response = await client.post(
        "/audiences", content=body.encode(),
        headers={**tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert_error(response, 422, "validation_error")  # the name is too long, not the body


NOT_ASCII_NUMBERS = ["²", "\u0665", "5_0", "+5", " 5", "5 ", "1e1", "0x10", "9" * 5000]


@pytest.mark.parametrize("limit", NOT_ASCII_NUMBERS)
async def test_limit_takes_ascii_digits_only(
    client: httpx.AsyncClient, tenant: Tenant, limit: str
) -> None:
    for path in ("/api-keys", "/webhooks", "/emails", "/audiences"):
        response = await client.get(path, params={"limit": limit}, headers=tenant.headers)
        assert_error(response, 422, "validation_error")


@pytest.mark.parametrize("cursor", ["²", "\u0665", "5_0", "+5", " 5"])
async def test_webhook_ids_and_cursors_take_ascii_digits_only(
    client: httpx.AsyncClient, tenant: Tenant, cursor: str
) -> None:
    assert_error(await client.get(f"/webhooks/{cursor}", headers=tenant.headers), 404, "not_found")
    response = await client.get("/webhooks", params={"after": cursor}, headers=tenant.headers)
    assert_error(response, 422, "validation_error")
