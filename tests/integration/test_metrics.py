"""GET /metrics after real work: a send delivered over SMTP, an event starting a run,
webhooks attempted, mail received; who may read it (loopback, or the token)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from email.message import EmailMessage
from typing import Any

import aiosmtplib
import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from mailbridge.api.app import create_app
from mailbridge.config import Settings
from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services import inbound
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks._activity_dispatch import default_consumers
from tests.integration.automation_setup import install
from tests.integration.conftest import USER_AGENT
from tests.integration.sending import Sending, email
from tests.smtp_listener import Listener, smtp_listener
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.integration

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

TRIGGER = {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}}
PAUSE = {"key": "pause", "type": "delay", "config": {"duration": "1 day"}}


@pytest.fixture
def send_settings(settings: Settings) -> Settings:
    # Webhooks to the loopback receiver; received mail without SPF/DKIM look-ups.
    return settings.model_copy(
        update={"webhook_allow_private": True, "inbound_authentication": False}
    )


@pytest.fixture
def listener() -> Iterator[Listener]:
    with smtp_listener() as running:
        yield running


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


async def scrape(client: httpx.AsyncClient, **headers: str) -> Samples:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


async def receive_mail(context: ServiceContext, team_id: str) -> None:
    """One message accepted for a receiving domain, one recipient refused."""
    async with context.database.session() as session:
        await create_domain(
            session, context.clock, context.settings, team_id, "inbox.example.org",
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        await session.commit()
    server, _handler = await inbound.start_listener(context, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ann@corp.io", "hi@inbox.example.org", "Hi"
    message.set_content("Hello")
    try:
        await aiosmtplib.send(
            message, hostname="127.0.0.1", port=port, sender="ann@corp.io",
            recipients=["hi@inbox.example.org", "nobody@elsewhere.io"],
        )  # fmt: skip
    finally:
        server.close()


async def test_every_family_counts_what_happened(
    sending: Sending, listener: Listener, receiver: Receiver
) -> None:
    client, headers, context = sending.client, sending.tenant.headers, sending.context
    before = await scrape(client)

    response = await client.post(
        "/webhooks",
        json={"endpoint": receiver.url(), "events": ["email.sent", "email.delivered"]},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    response = await sending.send(email(subject="Measured"))
    assert response.status_code == 200, response.text
    email_id = response.json()["id"]
    assert (await client.get(f"/emails/{email_id}", headers=headers)).status_code == 200
    assert (await client.get("/nowhere", headers=headers)).status_code == 404

    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
    async with DeliveryWorker(context, provider=provider) as worker:
        assert await worker.deliver_due() == 1
    assert len(listener.messages()) == 1

    automation_id = await install(
        context, sending.tenant.team_id, [TRIGGER, PAUSE], [{"from": "start", "to": "pause"}]
    )
    response = await client.post(
        "/events/send", json={"event": "user.signed_up", "email": "ada@corp.io"}, headers=headers
    )
    assert response.status_code == 202, response.text

    hooks = WebhookWorker(context, owner="metrics-test")
    dispatcher = ActivityDispatcher(
        context, default_consumers(context, on_webhook_deliveries=hooks.deliveries_added)
    )
    try:
        await dispatcher.dispatch_all()
        assert await hooks.deliver_due() >= 2
    finally:
        await hooks.close()

    receiving = await sending.tenants.create(plan="pro")  # a second domain needs pro
    await receive_mail(context, receiving.team_id)
    after = await scrape(client)

    def grew(name: str, **labels: str) -> bool:
        return value(after, name, **labels) > value(before, name, **labels)

    http = "mailbridge_http_requests_total"
    assert grew(http, route="/emails", method="POST", status="200")  # the send shortcut
    assert grew(http, route="/emails/{email_id}", method="GET", status="200")
    assert grew(http, route="/events/send", method="POST", status="202")
    assert grew(http, route="unmatched", method="GET", status="404")
    assert not any(n == http and ("route", f"/emails/{email_id}") in k for n, k in after)
    assert grew("mailbridge_http_request_duration_seconds_count", route="/emails")
    assert grew("mailbridge_http_request_duration_seconds_bucket", route="/emails", le="+Inf")

    assert grew("mailbridge_delivery_attempts_total", outcome="delivered")
    assert grew("mailbridge_smtp_responses_total", **{"class": "2xx"})
    assert grew("mailbridge_webhook_attempts_total", result="succeeded")
    assert grew("mailbridge_inbound_messages_total", result="accepted")
    assert grew("mailbridge_inbound_recipients_total", result="accepted")
    assert grew("mailbridge_inbound_recipients_total", result="refused")

    # Read from the database at scrape time.
    assert value(after, "mailbridge_database_scrape_up") == 1
    assert value(after, "mailbridge_emails", status="delivered") >= 1
    assert value(after, "mailbridge_automation_runs", automation=automation_id, status="running")
    assert value(after, "mailbridge_queue_due", queue="automation_runs") == 1
    for queue in ("emails", "automation_runs", "webhook_deliveries", "campaign_recipients"):
        assert (("mailbridge_queue_due", frozenset({("queue", queue)}))) in after
        key = ("mailbridge_queue_oldest_due_age_seconds", frozenset({("queue", queue)}))
        assert after[key] >= 0
    backend = context.database.engine.dialect.name
    assert value(after, "mailbridge_db_pool_connections", state="size", backend=backend) >= 1


@pytest.fixture
async def guarded(context: ServiceContext) -> AsyncIterator[FastAPI]:
    settings = context.settings.model_copy(update={"metrics_token": "s3cret-metrics"})
    guarded = ServiceContext(settings=settings, database=context.database, clock=context.clock)
    app = create_app(context=guarded)
    async with app.router.lifespan_context(app):
        yield app


def client_from(app: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 1234))
    return httpx.AsyncClient(
        transport=transport, base_url="http://mailbridge.test", headers={"User-Agent": USER_AGENT}
    )


async def test_with_a_token_set_it_must_be_presented(guarded: FastAPI) -> None:
    async with client_from(guarded, "10.0.0.1") as remote:
        for presented in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            refused = await remote.get("/metrics", headers=presented)
            assert refused.status_code == 401
            assert refused.json()["name"] == "missing_api_key"
        samples = await scrape(remote, Authorization="Bearer s3cret-metrics")
    assert value(samples, "mailbridge_database_scrape_up") == 1
    async with client_from(guarded, "127.0.0.1") as local:  # loopback needs it too
        assert (await local.get("/metrics")).status_code == 401


async def test_without_a_token_only_loopback_callers_read_it(app: FastAPI) -> None:
    async with client_from(app, "10.0.0.1") as remote:
        hidden = await remote.get("/metrics")
    assert hidden.status_code == 404 and hidden.json()["name"] == "not_found"
    for address in ("127.0.0.1", "::1"):
        async with client_from(app, address) as local:
            assert (await local.get("/metrics")).status_code == 200


async def test_a_database_down_costs_its_samples_not_the_scrape(
    client: httpx.AsyncClient, context: ServiceContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable() -> Any:
        raise ConnectionRefusedError("the database is down")

    monkeypatch.setattr(context.database, "session", unreachable)
    text = (await client.get("/metrics")).text
    samples = parse(text)
    assert value(samples, "mailbridge_database_scrape_up") == 0
    assert "mailbridge_emails" not in {name for name, _ in samples}
    assert "mailbridge_http_requests_total" in text


def test_the_route_is_not_in_the_openapi_document(app: FastAPI) -> None:
    assert "/metrics" not in app.openapi()["paths"]
