"""Outages (issue 21, must have 2 and 5): the database or Redis out of reach is a 503
``service_unavailable`` with ``retry-after`` — never a 500 — and the runner's delivery
worker rides out killed connections and a PostgreSQL outage, delivering every email
exactly once. ``/health`` stays up; ``/ready`` says whether to send traffic.

PostgreSQL connections are killed with ``pg_terminate_backend``, restricted to the
backends this test opened (the server is shared with other test runs); an outage is a
TCP proxy in front of PostgreSQL cut and restored (:mod:`tests.integration.outage_proxy`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import event, func, select
from sqlalchemy.engine import make_url

from mailbridge.api.app import create_app
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.mail.providers.base import Delivery, Handover, Outcome
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage import database as database_module
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Email
from tests.integration.conftest import POSTGRES_URL, USER_AGENT, Tenant, Tenants, bearer
from tests.integration.email_factory import add_domain, add_email
from tests.integration.outage_proxy import OutageProxy
from tests.integration.sending import Sending, email
from tests.integration.sending import add_domain as add_verified_shop
from tests.integration.test_auth import assert_error
from tests.smtp_listener import free_port, smtp_listener

POSTGRES_ONLY = pytest.mark.parametrize("backend", ["postgresql"])


@asynccontextmanager
async def api(context: ServiceContext) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(context=context)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://mailbridge.test",
            headers={"User-Agent": USER_AGENT},
        ) as client:
            yield client


def assert_unavailable(response: httpx.Response) -> None:
    assert_error(response, 503, "service_unavailable")
    assert int(response.headers["retry-after"]) >= 1


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    """Outages are logged as lines, never as the 500's traceback."""
    unhandled = [r for r in caplog.records if r.exc_info and "unhandled" in r.getMessage()]
    assert unhandled == []


def through(proxy: OutageProxy, settings: Settings) -> Settings:
    url = make_url(POSTGRES_URL).set(host="127.0.0.1", port=proxy.port)
    return settings.model_copy(update={"database_url": url.render_as_string(hide_password=False)})


def backend_pids(database: Database) -> set[int]:
    """The PostgreSQL backends this database's pool opens, as they are opened."""
    pids: set[int] = set()

    def opened(dbapi_connection: Any, _record: Any) -> None:
        pids.add(dbapi_connection.driver_connection.get_server_pid())

    event.listen(database.engine.sync_engine, "connect", opened)
    return pids


async def terminate(pids: set[int]) -> int:
    """pg_terminate_backend on these backends (of this database, never our own)."""
    connection = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg", "postgresql"))
    try:
        killed = await connection.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND pid = ANY($1::int[])",
            sorted(pids),
        )
    finally:
        await connection.close()
    return sum(1 for row in killed if row[0])


async def test_ready_is_200_when_the_database_answers_at_head(client: httpx.AsyncClient) -> None:
    ready = await client.get("/ready", headers={"User-Agent": ""})  # no key, no agent
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    health = (await client.get("/health")).json()
    assert health["status"] == "ok" and health["revision"] == health["revision_expected"]


async def test_a_database_out_of_reach_is_503_with_retry_after_and_health_stays_up(
    backend: str,
    settings: Settings,
    tenant: Tenant,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    if backend == "sqlite":
        (tmp_path / "a-directory").mkdir()  # SQLite: "unable to open database file"
        url = f"sqlite+aiosqlite:///{tmp_path / 'a-directory'}"
    else:
        url = make_url(POSTGRES_URL).set(port=free_port()).render_as_string(hide_password=False)
    down = settings.model_copy(update={"database_url": url})
    database = Database.from_settings(down)
    context = ServiceContext(settings=down, database=database, clock=SystemClock())
    try:
        async with api(context) as client:
            headers = bearer(tenant.token)
            assert_unavailable(await client.post("/emails", json=email(), headers=headers))
            assert_unavailable(await client.get("/api-keys", headers=headers))
            assert_unavailable(await client.get("/ready"))
            health = await client.get("/health")
            assert health.status_code == 200
            report = health.json()
            assert report["status"] == "degraded"
            assert report["revision"] is None and report["runner"]["alive"] is False
            # The dashboard, outside the API's middleware: a page saying so, not a 500.
            session = "mbs_" + "a" * 10 + "_" + "b" * 32  # looked up: the database is needed
            for path in ("/dashboard/login", "/dashboard"):
                page = await client.get(path, headers={"cookie": f"mb_session={session}"})
                assert page.status_code == 503, (path, page.text[:300])
                assert "service_unavailable" in page.text and page.headers["retry-after"]
    finally:
        await database.dispose()
    no_tracebacks(caplog)


@pytest.mark.parametrize("backend", ["sqlite"])  # SQLite's write lock: no PostgreSQL twin
async def test_sqlite_locked_past_its_busy_timeout_is_503(
    backend: str,
    settings: Settings,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(database_module, "SQLITE_BUSY_TIMEOUT_MS", 300)
    database = Database.from_settings(settings)
    context = ServiceContext(settings=settings, database=database, clock=SystemClock())
    await add_verified_shop(context, tenant.team_id)
    path = str(make_url(settings.resolved_database_url).database)
    try:
        async with api(context) as client:
            assert (
                await client.post("/emails", json=email(), headers=bearer(tenant.token))
            ).is_success
            holder = sqlite3.connect(path, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            try:
                locked = await client.post("/emails", json=email(), headers=bearer(tenant.token))
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert_unavailable(locked)
            again = await client.post("/emails", json=email(), headers=bearer(tenant.token))
            assert again.status_code == 200
    finally:
        await database.dispose()
    no_tracebacks(caplog)


@POSTGRES_ONLY
async def test_the_api_rides_out_killed_connections_and_a_postgresql_outage(
    settings: Settings, tenant: Tenant, context: ServiceContext, caplog: pytest.LogCaptureFixture
) -> None:
    await add_verified_shop(context, tenant.team_id)
    proxy = OutageProxy("127.0.0.1", make_url(POSTGRES_URL).port or 5432)
    await proxy.start()
    proxied = through(proxy, settings)
    database = Database.from_settings(proxied)
    pids = backend_pids(database)
    served = ServiceContext(settings=proxied, database=database, clock=SystemClock())
    headers = bearer(tenant.token)
    accepted = 0
    try:
        async with api(served) as client:
            assert (await client.post("/emails", json=email(), headers=headers)).status_code == 200
            accepted += 1
            # Every connection of the API's pool killed between two requests: the pre-ping
            # finds them dead and the next request runs on a new one.
            assert await terminate(pids) >= 1
            for _ in range(3):
                answer = await client.post("/emails", json=email(), headers=headers)
                assert answer.status_code in (200, 503), answer.text
                if answer.status_code == 503:
                    assert_unavailable(answer)
                else:
                    accepted += 1
            assert answer.status_code == 200

            await proxy.cut()  # PostgreSQL down
            assert_unavailable(await client.post("/emails", json=email(), headers=headers))
            assert_unavailable(await client.get("/emails", headers=headers))
            assert_unavailable(await client.get("/ready"))
            health = await client.get("/health")
            assert health.status_code == 200 and health.json()["status"] == "degraded"

            await proxy.restore()  # and back
            assert (await client.post("/emails", json=email(), headers=headers)).status_code == 200
            accepted += 1
            assert (await client.get("/ready")).status_code == 200
            assert (await client.get("/health")).json()["status"] == "ok"
    finally:
        await proxy.cut()
        await database.dispose()
    async with context.database.session() as session:
        stored = await session.scalar(select(func.count()).select_from(Email))
    assert stored == accepted
    no_tracebacks(caplog)


class FaultySmtpProvider(SmtpProvider):
    """An SMTP provider that runs ``faults[n]`` before its n-th handover is prepared."""

    def __init__(self, *args: Any, faults: dict[int, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.faults = faults
        self.prepared = 0

    async def prepare(self, delivery: Delivery, message: bytes) -> Handover | Outcome:
        self.prepared += 1
        fault = self.faults.pop(self.prepared, None)
        if fault is not None:
            await fault()
        return await super().prepare(delivery, message)


@POSTGRES_ONLY
async def test_the_delivery_worker_delivers_every_email_once_across_kills_and_an_outage(
    settings: Settings,
    context: ServiceContext,
    tenants: Tenants,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mailbridge")
    proxy = OutageProxy("127.0.0.1", make_url(POSTGRES_URL).port or 5432)
    await proxy.start()
    proxied = through(proxy, settings).model_copy(
        update={"delivery_lease_seconds": 2.0, "delivery_batch_size": 4, "delivery_concurrency": 4}
    )
    database = Database.from_settings(proxied)
    pids = backend_pids(database)
    runner_context = ServiceContext(settings=proxied, database=database, clock=SystemClock())
    tenant = await tenants.create()
    shop = await add_domain(context, tenant.team_id)
    ids = [(await add_email(context, shop, subject=f"Order {n}")).id for n in range(24)]

    async def kill() -> None:  # mid-batch: claims and journal commits on these connections
        assert await terminate(pids) >= 1

    outage_over = asyncio.Event()

    async def outage() -> None:
        async def down_then_back() -> None:
            await proxy.cut()
            await asyncio.sleep(1.5)
            await proxy.restore()
            outage_over.set()

        asyncio.get_running_loop().create_task(down_then_back())

    stopping = asyncio.Event()
    with smtp_listener() as listener:
        provider = FaultySmtpProvider(
            SmtpRelay.from_url(listener.url), pool_size=2, receipts=tmp_path / "receipts",
            faults={5: kill, 11: kill, 17: outage},
        )  # fmt: skip
        worker = DeliveryWorker(runner_context, provider=provider)
        running = asyncio.create_task(worker.run(stopping))
        try:
            async with asyncio.timeout(60):
                while await delivered(context, ids) < len(ids):
                    assert not running.done(), running
                    await asyncio.sleep(0.2)
        finally:
            stopping.set()
            await running
            await proxy.cut()
            await database.dispose()
        received = collections.Counter(message.message_id for message in listener.messages())
    assert outage_over.is_set() and not provider.faults
    assert received == {f"<{email_id}@shop.io>": 1 for email_id in ids}
    said = [r.getMessage() for r in caplog.records]
    assert any("database unavailable" in line for line in said), said


async def delivered(context: ServiceContext, ids: list[str]) -> int:
    async with context.database.session() as session:
        query = select(func.count()).where(Email.id.in_(ids), Email.status == "delivered")
        return int(await session.scalar(query) or 0)


# --- Redis down: the send rate limit fails open or closed ---------------------------------


@pytest.fixture
def send_settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    fail_open: bool = request.param
    return settings.model_copy(
        update={
            "send_rate_limit": "2/minute",
            "redis_url": f"redis://127.0.0.1:{free_port()}/15",  # nobody listens there
            "rate_limit_fail_open": fail_open,
        }
    )


@pytest.mark.parametrize("send_settings", [True], indirect=True)
async def test_redis_down_fails_open_with_one_warning_an_outage(
    sending: Sending, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mailbridge.api.rate_limit")
    answers = [await sending.send(email()) for _ in range(4)]  # past the 2/minute limit
    assert [a.status_code for a in answers] == [200] * 4
    assert all("ratelimit-limit" not in a.headers for a in answers)  # nothing was counted
    warnings = [r for r in caplog.records if r.name == "mailbridge.api.rate_limit"]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()
    assert await sending.count() == 4


@pytest.mark.parametrize("send_settings", [False], indirect=True)
async def test_redis_down_fails_closed_with_503_when_so_configured(
    sending: Sending, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mailbridge.api.rate_limit")
    for _ in range(2):
        assert_unavailable(await sending.send(email()))
    assert_unavailable(await sending.batch([email()]))
    listed = await sending.client.get("/api-keys", headers=sending.tenant.headers)
    assert listed.status_code == 200  # only the send endpoints are limited
    warnings = [r for r in caplog.records if r.name == "mailbridge.api.rate_limit"]
    assert len(warnings) == 1
    assert await sending.count() == 0
    no_tracebacks(caplog)
