"""The listener's memory of a team's room under its quota (``inbound._routing.Router``):
one lookup for many conversations, and how long an answer is kept."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.services.inbound import _routing as routing
from mailbridge.services.kernel import ServiceContext
from tests.integration.conftest import Tenants


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The teams ``fits_quota`` was asked about, each lookup slow enough to overlap."""
    asked: list[str] = []
    real = routing.fits_quota

    async def counted(
        session: AsyncSession, context: ServiceContext, team_id: str
    ) -> tuple[bool, bool]:
        asked.append(team_id)
        await asyncio.sleep(0.05)
        return await real(session, context, team_id)

    monkeypatch.setattr(routing, "fits_quota", counted)
    return asked


async def test_concurrent_conversations_share_one_lookup(
    context: ServiceContext, tenants: Tenants, lookups: list[str]
) -> None:
    tenant = await tenants.create()
    router = routing.Router(context)
    answers = await asyncio.gather(*(router.has_room(tenant.team_id) for _ in range(20)))
    assert answers == [True] * 20
    assert lookups == [tenant.team_id]


@pytest.mark.parametrize(("plan", "kept"), [("free", routing.ROOM_SECONDS),
                                            ("unlimited", routing.ROUTE_SECONDS)])  # fmt: skip
async def test_room_is_remembered_longer_when_the_plan_caps_nothing(
    context: ServiceContext, tenants: Tenants, lookups: list[str], plan: str, kept: float
) -> None:
    tenant = await tenants.create(plan=plan)
    now = [1000.0]
    router = routing.Router(context, monotonic=lambda: now[0])
    assert await router.has_room(tenant.team_id)
    now[0] += kept - 0.1
    assert await router.has_room(tenant.team_id)
    assert len(lookups) == 1
    now[0] += 0.2
    assert await router.has_room(tenant.team_id)
    assert len(lookups) == 2


async def test_a_failed_lookup_reaches_every_waiter_and_is_not_remembered(
    context: ServiceContext, tenants: Tenants, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await tenants.create()
    calls = 0

    async def broken(*_args: object) -> tuple[bool, bool]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        raise OSError("database gone")

    monkeypatch.setattr(routing, "fits_quota", broken)
    router = routing.Router(context)
    answers = await asyncio.gather(
        *(router.has_room(tenant.team_id) for _ in range(5)), return_exceptions=True
    )
    assert all(isinstance(answer, OSError) for answer in answers) and calls == 1
    with pytest.raises(OSError):
        await router.has_room(tenant.team_id)
    assert calls == 2
