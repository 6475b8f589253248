"""The integration tier: the same tests on SQLite and on PostgreSQL.

The schema is built once per backend and per session (Alembic, as in production);
each test gets a copy of the SQLite file, or the PostgreSQL schema truncated.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from mailbridge.api.app import create_app
from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services.accounts import _api_keys as api_keys
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._teams import Role
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Base

POSTGRES_URL = os.environ.get(
    "MAILBRIDGE_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
USER_AGENT = "mailbridge-tests/1.0"


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "mailbridge.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[str]:
    schema = f"mb_test_{uuid.uuid4().hex[:12]}"

    async def execute(sql: str) -> None:
        connection = await asyncpg.connect(_asyncpg_dsn(POSTGRES_URL))
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    asyncio.run(execute(f'CREATE SCHEMA "{schema}"'))
    try:
        upgrade(POSTGRES_URL, schema)
        yield schema
    finally:
        asyncio.run(execute(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        database = tmp_path / "mailbridge.db"
        shutil.copy(template, database)
        return Settings(data_dir=tmp_path, database_url=f"sqlite+aiosqlite:///{database}")
    schema: str = request.getfixturevalue("postgres_schema")
    return Settings(data_dir=tmp_path, database_url=POSTGRES_URL, database_schema=schema)


@pytest.fixture
async def database(settings: Settings) -> AsyncIterator[Database]:
    db = Database.from_settings(settings)
    if not db.is_sqlite:
        tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
        async with db.engine.begin() as connection:
            await connection.exec_driver_sql(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    yield db
    await db.dispose()


@pytest.fixture
def context(settings: Settings, database: Database) -> ServiceContext:
    return ServiceContext(settings=settings, database=database, clock=SystemClock())


@pytest.fixture
async def app(context: ServiceContext) -> AsyncIterator[FastAPI]:
    application = create_app(context=context)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://mailbridge.test",
        headers={"User-Agent": USER_AGENT},
    ) as http:
        yield http


@dataclass
class Tenant:
    """A team with a full-access key, ready to call the API."""

    team_id: str
    key_id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class Tenants:
    def __init__(self, context: ServiceContext) -> None:
        self.context = context

    async def create(self, name: str | None = None, plan: str = "free") -> Tenant:
        async with self.context.database.session() as session:
            team = await teams.create_team(
                session, self.context.clock, name or f"team-{uuid.uuid4().hex[:8]}", plan
            )
            key, token = await api_keys.create_api_key(
                session, self.context.clock, team.id, "test key"
            )
        return Tenant(team.id, key.id, token)

    async def key(
        self,
        tenant: Tenant,
        permission: Permission = Permission.FULL_ACCESS,
        *,
        domain: str | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[str, str]:
        """A further key of ``tenant``: (id, token)."""
        async with self.context.database.session() as session:
            key, token = await api_keys.create_api_key(
                session,
                self.context.clock,
                tenant.team_id,
                "extra key",
                permission,
                domain,
                expires_at,
            )
        return key.id, token

    async def member(self, tenant: Tenant, role: Role) -> str:
        async with self.context.database.session() as session:
            team = await teams.resolve_team(session, tenant.team_id)
            _member, token = await teams.add_team_member(
                session,
                self.context.clock,
                team,
                f"{role.value}-{uuid.uuid4().hex[:6]}@corp.io",
                role,
            )
        return token


@pytest.fixture
def tenants(context: ServiceContext) -> Tenants:
    return Tenants(context)


@pytest.fixture
async def tenant(tenants: Tenants) -> Tenant:
    return await tenants.create()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# Fixtures of the send endpoints (a team with a verified domain, on a fake clock).
# Fixtures of the automation API tests (shop.io with a published template and a segment).
from tests.integration.automation_api import shop  # noqa: E402, F401
from tests.integration.campaign_setup import shop_campaigns  # noqa: E402, F401
from tests.integration.sending import send_settings, sending  # noqa: E402, F401

# Fixtures of the webhook tests (the API, dispatcher and worker on a fake clock; a receiver).
from tests.integration.webhook_setup import hook_settings, hooks, receiver  # noqa: E402, F401
