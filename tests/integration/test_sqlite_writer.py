"""The inline writer of the hot write paths on a SQLite file: what it stores reads back as
SQLAlchemy's own writes, acceptance through it decides and stores what ``store`` does,
and it never blocks the event loop on a lock held elsewhere.

SQLite only: on PostgreSQL these paths go through SQLAlchemy (the ``store`` tests of
test_send.py and test_send_limits.py cover both).
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select

from mailbridge.clock import FakeClock
from mailbridge.services.accounts._auth import Principal
from mailbridge.services.accounts._quotas import QuotaLedger, bucket_of
from mailbridge.services.email import _acceptance as email_acceptance
from mailbridge.services.email import _idempotency as idempotency
from mailbridge.services.email._acceptance import SendJob
from mailbridge.services.email._preparation import prepare_email
from mailbridge.services.email._requests import SendEmailRequest
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.suppressions import _suppress as suppressions
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import (
    Email,
    EmailEvent,
    IdempotencyRecord,
    QuotaUsage,
    Team,
)
from mailbridge.storage.types import new_id
from tests.integration.conftest import Tenants
from tests.integration.email_factory import add_domain

NOW = datetime(2026, 11, 2, 9, 30, 0, 123456, tzinfo=UTC)


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _writer(context: ServiceContext) -> SqliteWriter:
    writer = context.database.sqlite_writer
    assert writer is not None
    return writer


def _path(context: ServiceContext) -> str:
    return _writer(context).path


def _raw(path: str, sql: str) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def _email_row(team_id: str, domain_id: str, subject: str, **changes: Any) -> dict[str, Any]:
    email_id = new_id()
    row: dict[str, Any] = {
        "id": email_id, "team_id": team_id, "api_key_id": None, "domain_id": domain_id,
        "from_address": "Shop <news@shop.io>", "from_email": "news@shop.io",
        "to": ["Ann <ann@corp.io>"], "cc": [], "bcc": ["b@corp.io"], "reply_to": [],
        "delivery_recipients": ["ann@corp.io", "b@corp.io"],
        "recipients_text": "\nann@corp.io\nb@corp.io\n", "subject": subject,
        "html": "<p>Ünïcode ✓</p>", "text": None, "headers": {"X-Entity": "7"},
        "tags": [{"name": "kind", "value": "receipt"}], "template_id": None,
        "template_version_id": None, "contact_id": None, "campaign_id": None,
        "marketing": True, "status": "scheduled", "last_event": "scheduled",
        "scheduled_at": NOW + timedelta(hours=1), "due_at": NOW + timedelta(hours=1),
        "lease_owner": None, "lease_until": None, "attempts": 0,
        "message_id": f"<{email_id}@shop.io>", "last_error": None, "created_at": NOW,
        "updated_at": NOW, "sent_at": None,
    }  # fmt: skip
    row.update(changes)
    return row


async def test_rows_written_inline_are_stored_as_sqlalchemy_stores_them(
    context: ServiceContext, tenants: Tenants
) -> None:
    tenant = await tenants.create()
    domain = await add_domain(context, tenant.team_id)
    on_the_hour = NOW.replace(minute=0, second=0, microsecond=0)  # stored with ".000000"
    empty = {"headers": {}, "tags": [], "to": ["c@corp.io"], "marketing": False,
             "scheduled_at": None, "due_at": on_the_hour}  # fmt: skip
    through_core = [
        _email_row(tenant.team_id, domain.id, "full"),
        _email_row(tenant.team_id, domain.id, "empty", **empty),
    ]
    inline = [
        _email_row(tenant.team_id, domain.id, "full"),
        _email_row(tenant.team_id, domain.id, "empty", **empty),
    ]
    async with context.database.session() as session:
        await session.execute(insert(table_of(Email)), through_core)
        await session.commit()
    writer = _writer(context)
    await writer.transaction(lambda c: writer.insert(c, table_of(Email), inline))

    raw = _raw(_path(context), "SELECT * FROM emails ORDER BY subject, id")
    ids = {row["id"] for row in inline}
    stored_core = [row[1:] for row in raw if row[0] not in ids]
    stored_inline = [row[1:] for row in raw if row[0] in ids]
    message_id = [column.name for column in table_of(Email).columns].index("message_id") - 1

    def without_message_id(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [row[:message_id] + row[message_id + 1 :] for row in rows]

    assert len(stored_inline) == 2
    assert without_message_id(stored_inline) == without_message_id(stored_core)
    async with context.database.session() as session:
        full = await session.get(Email, inline[0]["id"])
    assert full is not None
    assert (full.to, full.bcc, full.headers, full.marketing) == (
        ["Ann <ann@corp.io>"], ["b@corp.io"], {"X-Entity": "7"}, True,
    )  # fmt: skip
    assert full.created_at == NOW and full.scheduled_at == NOW + timedelta(hours=1)


async def _jobs(context: ServiceContext, team_id: str, domain: str, key: str) -> list[SendJob]:
    """Three requests: one with a suppressed cc, one over the daily quota, one that fits
    and completes an idempotency key."""
    principal = Principal(team_id=team_id, plan="free")

    async def prepared(**body: Any) -> Any:
        request = SendEmailRequest.model_validate(
            {"from": f"Shop <news@{domain}>", "subject": "Hi", "html": "<p>Hi</p>", **body}
        )
        async with context.database.session() as session:
            return await prepare_email(session, context, principal, request, NOW)

    reservation = await idempotency.begin(
        context.database, context.clock, team_id, key, "emails", "hash"
    )
    assert isinstance(reservation, idempotency.Reservation)
    return [
        SendJob(team_id, [await prepared(to=["ann@corp.io"], cc=["gone@corp.io"])]),
        SendJob(team_id, [await prepared(to=[f"u{n}@corp.io" for n in range(3)])]),
        SendJob(
            team_id,
            [await prepared(to=["bo@corp.io"])],
            reservation,
            idempotency.StoredAnswer(200, {"id": "x"}, {}),
        ),
    ]


async def _seed_team(context: ServiceContext, tenants: Tenants, domain: str) -> str:
    tenant = await tenants.create(plan="free")
    await add_domain(context, tenant.team_id, domain)
    async with context.database.session() as session:
        await suppressions.suppress(
            session, context.clock, tenant.team_id, "gone@corp.io", "bounced"
        )
        session.add(QuotaUsage(team_id=tenant.team_id, bucket_start=bucket_of(NOW), count=97))
        await session.commit()
    return tenant.team_id


async def _stored(context: ServiceContext, team_id: str) -> dict[str, Any]:
    async with context.database.session() as session:
        emails = (await session.scalars(select(Email).where(Email.team_id == team_id))).all()
        events = (
            await session.scalars(select(EmailEvent).where(EmailEvent.team_id == team_id))
        ).all()
        usage = await session.scalar(select(QuotaUsage.count).where(QuotaUsage.team_id == team_id))
        record = await session.scalar(
            select(IdempotencyRecord).where(IdempotencyRecord.team_id == team_id)
        )
    assert record is not None
    return {
        "emails": sorted((e.subject, tuple(e.to), tuple(e.delivery_recipients), e.status)
                         for e in emails),
        "events": sorted((e.type, tuple(sorted(e.data.get("recipients", [])))) for e in events),
        "usage": usage,
        "idempotency": (record.state, record.response_status, record.response_body),
    }  # fmt: skip


async def test_inline_acceptance_decides_and_stores_what_store_does(
    context: ServiceContext, tenants: Tenants
) -> None:
    context = ServiceContext(context.settings, context.database, FakeClock(NOW))
    through_session = await _seed_team(context, tenants, "shop.io")
    inline = await _seed_team(context, tenants, "store.io")
    jobs = await _jobs(context, through_session, "shop.io", "k1")
    async with context.database.session() as session:
        expected = await email_acceptance.accept(session, context.clock, jobs)
    writer = _writer(context)
    jobs = await _jobs(context, inline, "store.io", "k2")
    outcomes = await writer.transaction(
        lambda c: email_acceptance.store_inline(writer, c, NOW, jobs)
    )

    assert [type(o).__name__ for o in outcomes] == [type(o).__name__ for o in expected]
    assert outcomes[0] is None and outcomes[2] is None and outcomes[1] is not None
    assert outcomes[1].name == "daily_quota_exceeded"
    stored = await _stored(context, inline)
    assert stored == await _stored(context, through_session)
    assert stored["usage"] == 99 and stored["idempotency"] == ("completed", 200, {"id": "x"})
    assert ("suppressed", ("gone@corp.io",)) in stored["events"]
    ledger = await _ledger(context, inline)
    assert ledger.teams[inline].day == 99


async def _ledger(context: ServiceContext, team_id: str) -> QuotaLedger:
    writer = _writer(context)
    return await writer.transaction(lambda c: QuotaLedger.load_inline(writer, c, NOW, [team_id]))


async def test_a_failed_transaction_stores_nothing(context: ServiceContext) -> None:
    writer = _writer(context)
    team = {"id": new_id(), "name": "rolled back", "plan": "free", "created_at": NOW}

    def fail(connection: sqlite3.Connection) -> None:
        writer.insert(connection, table_of(Team), [team])
        raise RuntimeError("after the insert")

    with pytest.raises(RuntimeError):
        await writer.transaction(fail)
    assert _raw(writer.path, "SELECT count(*) FROM teams WHERE name = 'rolled back'") == [(0,)]
    await writer.transaction(lambda c: writer.insert(c, table_of(Team), [team]))
    assert _raw(writer.path, "SELECT count(*) FROM teams WHERE name = 'rolled back'") == [(1,)]


async def test_a_locked_database_is_waited_for_without_blocking_the_loop(
    context: ServiceContext,
) -> None:
    writer = _writer(context)
    holder = sqlite3.connect(writer.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    team_id = new_id()
    team = {"id": team_id, "name": "waited", "plan": "free", "created_at": NOW}
    try:
        waiting = asyncio.create_task(
            writer.transaction(lambda c: writer.insert(c, table_of(Team), [team]))
        )
        await asyncio.sleep(0.05)  # the loop runs on while the writer waits
        assert not waiting.done()
    finally:
        holder.execute("COMMIT")
        holder.close()
    await waiting
    assert _raw(writer.path, "SELECT name FROM teams WHERE id = '" + team_id + "'") == [("waited",)]


async def test_rows_must_carry_the_columns_sqlalchemy_would_default(
    context: ServiceContext,
) -> None:
    writer = _writer(context)
    team = {"name": "no id", "created_at": NOW}
    with pytest.raises(ValueError, match="id"):
        await writer.transaction(lambda c: writer.insert(c, table_of(Team), [team]))


async def test_updates_by_key_and_inserts_that_skip_conflicts(context: ServiceContext) -> None:
    writer = _writer(context)
    team_id, other_id = new_id(), new_id()
    team = {"id": team_id, "name": "before", "plan": "free", "created_at": NOW}
    await writer.transaction(lambda c: writer.insert(c, table_of(Team), [team]))
    clash = [team | {"name": "again"}, team | {"id": other_id, "name": "other"}]
    await writer.transaction(lambda c: writer.insert(c, table_of(Team), clash, or_ignore=True))
    changed = [{"name": "after", "created_at": NOW + timedelta(days=1), "id": team_id}]
    await writer.transaction(lambda c: writer.update(c, table_of(Team), changed))
    rows = _raw(
        writer.path,
        f"SELECT id, name, created_at FROM teams WHERE id IN ('{team_id}', '{other_id}')",
    )
    assert sorted(rows) == sorted([
        (team_id, "after", "2026-11-03 09:30:00.123456"),
        (other_id, "other", "2026-11-02 09:30:00.123456"),
    ])  # fmt: skip
