"""Spec §8.2: the send endpoints are limited per client IP, in memory or in Redis."""

from __future__ import annotations

import os

import coredis
import pytest

from mailbridge.config import Settings
from tests.integration.sending import Sending, email
from tests.integration.test_auth import assert_error

# One Redis database per pytest-xdist worker ("gw0", "gw1", ...), so that two workers
# never count each other's sends from 127.0.0.1 or flush each other's counters.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
REDIS = f"redis://127.0.0.1:6379/{15 - _WORKER % 8}"


@pytest.fixture(params=["memory", "redis"])
async def send_settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    update: dict[str, object] = {"send_rate_limit": "3/minute"}
    if request.param == "redis":
        client: coredis.Redis[bytes] = coredis.Redis.from_url(REDIS)
        await client.flushdb()  # counters of earlier runs
        client.connection_pool.disconnect()
        update["redis_url"] = REDIS
    return settings.model_copy(update=update)


async def test_the_fourth_send_in_a_window_is_429(sending: Sending) -> None:
    responses = [await sending.send(email()) for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [r.headers["ratelimit-remaining"] for r in responses] == ["2", "1", "0"]
    assert all(r.headers["ratelimit-limit"] == "3" for r in responses)
    assert all(0 <= int(r.headers["ratelimit-reset"]) <= 61 for r in responses)
    refused = await sending.send(email())
    assert_error(refused, 429, "rate_limit_exceeded")
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-remaining"] == "0"
    batch = await sending.batch([email()])
    assert_error(batch, 429, "rate_limit_exceeded")
    assert await sending.count() == 3


async def test_errors_carry_the_headers_and_other_endpoints_are_not_limited(
    sending: Sending,
) -> None:
    invalid = await sending.send(email(to=["nope"]))
    assert invalid.status_code == 422 and invalid.headers["ratelimit-remaining"] == "2"
    for _ in range(5):
        listed = await sending.client.get("/api-keys", headers=sending.tenant.headers)
        assert listed.status_code == 200 and "ratelimit-limit" not in listed.headers
