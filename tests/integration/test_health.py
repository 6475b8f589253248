"""GET /health: what ``mailbridge doctor`` reads — the schema's revision against the code's,
a runner's heartbeat, and (asked for) whether the SMTP relay answers."""

from __future__ import annotations

from datetime import timedelta

import httpx

from mailbridge.services.kernel import ServiceContext, record_runner_heartbeat
from mailbridge.services.operations._health import expected_revision, relay_check
from tests.smtp_listener import free_port, smtp_listener


async def test_health_says_the_schema_is_the_codes_and_whether_a_runner_is_alive(
    client: httpx.AsyncClient, context: ServiceContext
) -> None:
    before = (await client.get("/health")).json()
    assert before["revision"] == before["revision_expected"] == expected_revision()
    assert before["runner"] == {"heartbeat_at": None, "alive": False}
    assert "relay" not in before
    await record_runner_heartbeat(context.database, context.clock.now())
    assert (await client.get("/health")).json()["runner"]["alive"] is True
    await record_runner_heartbeat(context.database, context.clock.now() - timedelta(minutes=5))
    assert (await client.get("/health")).json()["runner"]["alive"] is False


async def test_the_relay_check_reaches_a_real_listener_and_says_when_it_cannot() -> None:
    with smtp_listener() as listener:
        found = await relay_check(listener.url)
    assert (found["configured"], found["reachable"]) == (True, True)
    assert found["detail"].startswith(f"127.0.0.1:{listener.port}: 220")
    down = await relay_check(f"smtp://127.0.0.1:{free_port()}")
    assert (down["configured"], down["reachable"]) == (True, False)
    assert (await relay_check(None))["configured"] is False


async def test_health_checks_the_relay_when_asked(client: httpx.AsyncClient) -> None:
    answer = (await client.get("/health", params={"relay": "true"})).json()
    assert answer["relay"]["configured"] is False  # the tests' settings send to the outbox
    bad = await client.get("/health", params={"relay": "maybe"})
    assert bad.status_code == 422 and bad.json()["name"] == "validation_error"
