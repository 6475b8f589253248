"""GET /health: what ``mailbridge doctor`` reads — the schema's revision against the code's,
a runner's heartbeat, and (asked for) whether the SMTP relay answers."""

from __future__ import annotations

import logging
from datetime import timedelta

import httpx
import pytest

from mailbridge.api.app import create_app
from mailbridge.services.kernel import ServiceContext, record_runner_heartbeat
from mailbridge.services.operations._health import expected_revision, health_report, relay_check
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


async def test_an_http_public_url_on_a_public_host_is_warned_about_in_health_and_logs(
    context: ServiceContext, caplog: pytest.LogCaptureFixture
) -> None:
    """RFC 8058: one-click unsubscribe counts only over HTTPS; the links still work."""
    local = (await health_report(context))["public_url"]
    assert local == {"url": context.settings.public_url, "warning": None}  # loopback: fine
    settings = context.settings.model_copy(update={"public_url": "http://mail.shop.io"})
    exposed = ServiceContext(settings=settings, database=context.database, clock=context.clock)
    warning = (await health_report(exposed))["public_url"]["warning"]
    assert warning is not None and "RFC 8058" in warning and "https" in warning
    app = create_app(context=exposed)
    with caplog.at_level(logging.WARNING, logger="mailbridge.api.app"):
        async with app.router.lifespan_context(app):
            pass
    assert any("MAILBRIDGE_PUBLIC_URL" in record.getMessage() for record in caplog.records)
    secure = settings.model_copy(update={"public_url": "https://mail.shop.io"})
    assert secure.public_url_warning is None
