"""Writers racing for a team's quota (spec §8.1): on PostgreSQL the team is locked last
and the charge checked again under the lock (``accounts._quotas``); nothing overshoots,
and a charge that no longer fits is refused, its rows rolled back."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import func, select, update

from mailbridge.errors import ApiError, DailyQuotaExceeded
from mailbridge.services.accounts import Principal, QuotaLedger, QuotaRaced, locks_last
from mailbridge.services.accounts._quotas import bucket_of
from mailbridge.services.email import SendEmailRequest, SendJob, prepare_email
from mailbridge.services.email._acceptance import accept
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import QuotaUsage, Team
from tests.integration.sending import Sending, email


async def _job(context: ServiceContext, team_id: str, recipients: int, now: datetime) -> SendJob:
    body = SendEmailRequest.model_validate(
        email(to=[f"r{n}-{uuid.uuid4().hex[:8]}@corp.io" for n in range(recipients)])
    )
    async with context.database.session() as session:
        prepared = await prepare_email(session, context, Principal(team_id, "free"), body, now)
    return SendJob(team_id, [prepared])


async def _accept(context: ServiceContext, sending: Sending, job: SendJob) -> ApiError | None:
    async with context.database.session() as session:
        return (await accept(session, sending.clock, [job]))[0]


async def test_writers_in_separate_transactions_never_overshoot(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    jobs = [await _job(context, team_id, 7, sending.clock.now()) for _ in range(30)]
    outcomes = await asyncio.gather(*(_accept(context, sending, job) for job in jobs))
    assert sum(outcome is None for outcome in outcomes) == 14  # 14 x 7 = 98 <= 100 < 105
    assert all(isinstance(o, DailyQuotaExceeded) for o in outcomes if o is not None)
    assert await sending.count() == 14


async def test_a_charge_read_without_the_lock_is_checked_again_under_it(
    sending: Sending,
) -> None:
    context, team_id, now = sending.context, sending.tenant.team_id, sending.clock.now()
    async with context.database.session() as first:
        if not locks_last(first):
            # SQLite locks first: a transaction that read before another writer committed
            # could not take the write lock afterwards.
            assert context.database.is_sqlite
            return
        ledger = await QuotaLedger.load(first, now, [team_id])
        ledger.charge(team_id, 60)
        async with context.database.session() as second:  # another process, meanwhile
            theirs = await QuotaLedger.load(second, now, [team_id])
            theirs.charge(team_id, 60)
            await theirs.settle(second)
            await second.commit()
        with pytest.raises(QuotaRaced):
            await ledger.settle(first)


async def test_a_send_that_lost_the_race_is_refused_and_stores_nothing(
    sending: Sending, monkeypatch: pytest.MonkeyPatch
) -> None:
    context, team_id, now = sending.context, sending.tenant.team_id, sending.clock.now()
    async with context.database.session() as session:
        session.add(QuotaUsage(team_id=team_id, bucket_start=bucket_of(now), count=60))
        await session.commit()
    # The first reading of the usage is taken before the 60 above were committed: what a
    # writer reading without the lock sees when another one commits just after.
    real_load = QuotaLedger.load.__func__  # type: ignore[attr-defined]
    readings: list[int] = []

    async def load(cls: type[QuotaLedger], *args: Any) -> QuotaLedger:
        ledger: QuotaLedger = await real_load(cls, *args)
        readings.append(ledger.teams[team_id].day)
        if len(readings) == 1 and not context.database.is_sqlite:
            ledger.teams[team_id].day = ledger.teams[team_id].month = 0
        return ledger

    monkeypatch.setattr(QuotaLedger, "load", classmethod(load))
    outcome = await _accept(context, sending, await _job(context, team_id, 50, now))
    assert isinstance(outcome, DailyQuotaExceeded)
    assert await sending.count() == 0
    # PostgreSQL: the optimistic reading (made to miss the 60; the check under the lock is
    # a statement of its own), then the retry's with the lock first. SQLite locks first:
    # one reading, and no other writer can commit between it and the charge.
    assert readings == ([60, 60] if not context.database.is_sqlite else [60])


async def test_an_uncapped_teams_usage_is_still_counted(sending: Sending) -> None:
    context, team_id, now = sending.context, sending.tenant.team_id, sending.clock.now()
    async with context.database.session() as session:
        await session.execute(update(Team).where(Team.id == team_id).values(plan="unlimited"))
        await session.commit()
    jobs = [await _job(context, team_id, 45, now) for _ in range(3)]  # over "free"'s 100
    outcomes = await asyncio.gather(*(_accept(context, sending, job) for job in jobs))
    assert outcomes == [None, None, None]
    async with context.database.session() as session:
        used = await session.scalar(
            select(func.sum(QuotaUsage.count)).where(QuotaUsage.team_id == team_id)
        )
    assert used == 135
