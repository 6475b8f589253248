"""``GET /emails/metrics``: counts and rates by the time things happened, totals and rows
by period (every period, in the asked timezone), domain, email and broadcast."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import insert

from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import (
    Campaign,
    Contact,
    ContactEngagement,
    EmailEvent,
    ReceivedEmail,
)
from mailbridge.storage.types import new_id
from tests.integration.conftest import Tenant, Tenants
from tests.integration.email_factory import add_domain, add_email
from tests.integration.test_auth import assert_error

DAY = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday


async def events(context: ServiceContext, email: Any, *happened: tuple[str, datetime]) -> None:
    async with context.database.session() as session:
        for kind, at in happened:
            data: dict[str, Any] = {}
            if kind.startswith("bounced"):
                kind, data = "bounced", {"bounce": {"type": kind.removeprefix("bounced_")}}
            session.add(EmailEvent(email_id=email.id, team_id=email.team_id, type=kind,
                                   data=data, created_at=at))  # fmt: skip
        await session.commit()


async def received(context: ServiceContext, team_id: str, to: str, at: datetime, kind: str) -> None:
    async with context.database.session() as session:
        await session.execute(insert(ReceivedEmail).values(
            id=new_id(), team_id=team_id, envelope_from="x@elsewhere.example",
            envelope_to=[to], recipient=to, from_address="x@elsewhere.example", to=[to],
            subject="Hi", text="Hi", size=2, blob=uuid.uuid4().hex * 2, kind=kind,
            created_at=at,
        ))  # fmt: skip
        await session.commit()


async def metrics(client: httpx.AsyncClient, tenant: Tenant, **params: str) -> dict[str, Any]:
    answer = await client.get("/emails/metrics", params=params, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.fixture
async def tenant(tenants: Tenants) -> Tenant:
    return await tenants.create(plan="pro")  # two sending domains


@pytest.fixture
async def mail(context: ServiceContext, tenant: Tenant) -> dict[str, Any]:
    """Two domains' mail over three days of a week, a broadcast among it."""
    shop = await add_domain(context, tenant.team_id, "shop.io")
    news = await add_domain(context, tenant.team_id, "news.io")
    first = await add_email(context, shop)
    second = await add_email(context, shop, to=("bob@corp.io",))
    third = await add_email(context, news)
    at = DAY + timedelta(hours=9)
    await events(
        context,
        first,
        ("sent", at),
        ("delivered", at),
        ("opened", at),
        ("opened", at + timedelta(days=1)),
        ("clicked", at + timedelta(days=1)),
    )
    await events(context, second, ("sent", at), ("bounced_hard", at + timedelta(minutes=1)))
    await events(context, third, ("sent", at + timedelta(days=2)),
                 ("delivered", at + timedelta(days=2)), ("bounced_soft", at + timedelta(days=2)),
                 ("complained", at + timedelta(days=2, hours=1)))  # fmt: skip
    # A broadcast: the third email is its email to a contact, who unsubscribed.
    campaign_id, contact_id = new_id(), new_id()
    async with context.database.session() as session:
        session.add(Campaign(id=campaign_id, team_id=tenant.team_id, name="November news",
                             status="sent", created_at=at, updated_at=at))  # fmt: skip
        session.add(Contact(id=contact_id, team_id=tenant.team_id,
                            audience_id=await _audience(context, tenant), email="ann@corp.io",
                            created_at=at, updated_at=at))  # fmt: skip
        await session.flush()
        row = await session.get(type(third), third.id)
        assert row is not None
        row.campaign_id, row.contact_id = campaign_id, contact_id
        session.add(ContactEngagement(contact_id=contact_id, campaign_id=campaign_id,
                                      kind="unsubscribed", team_id=tenant.team_id,
                                      first_at=at + timedelta(days=2, hours=2)))  # fmt: skip
        await session.commit()
    await received(context, tenant.team_id, "hello@shop.io", at, "message")
    await received(context, tenant.team_id, "hello@news.io", at, "reply")
    await received(context, tenant.team_id, "bounces@shop.io", at, "bounce")  # a report
    return {"shop": shop, "news": news, "emails": [first, second, third],
            "campaign_id": campaign_id}  # fmt: skip


async def _audience(context: ServiceContext, tenant: Tenant) -> str:
    from mailbridge.services import audiences

    async with context.database.session() as session:
        audience = await audiences.resolve_audience(session, context.clock, tenant.team_id, None)
        return audience.id


RANGE = {"start_date": "2026-11-02", "end_date": "2026-11-08"}


async def test_totals_count_what_happened_in_the_range(
    client: httpx.AsyncClient, tenant: Tenant, mail: dict[str, Any]
) -> None:
    body = await metrics(client, tenant, **RANGE)
    assert body["object"] == "metrics" and "data" not in body
    assert body["start_date"] == "2026-11-02T00:00:00.000Z"
    assert body["end_date"] == "2026-11-09T00:00:00.000Z"  # the end date's whole day
    assert body["granularity"] == "daily" and body["dimensions"] == []
    totals = body["totals"]
    assert (totals["sent"], totals["delivered"], totals["bounced"]) == (3, 2, 2)
    assert (totals["bounced_permanent"], totals["bounced_transient"]) == (1, 1)
    assert (totals["opened"], totals["unique_opened"], totals["clicked"]) == (2, 1, 1)
    assert (totals["complained"], totals["unsubscribed"], totals["received"]) == (1, 1, 2)
    assert totals["delivery_rate"] == round(2 / 3, 4) and totals["open_rate"] == 0.5
    assert totals["bounce_rate"] == round(2 / 3, 4) and totals["complaint_rate"] == 0.5
    assert totals["failed"] == 0 and totals["bounced_undetermined"] == 0
    assert list(totals) == body["metrics"]  # every metric, in the SDK's order

    # A narrower range: only the first day.
    first_day = await metrics(client, tenant, start_date="2026-11-02", end_date="2026-11-02")
    assert first_day["totals"]["sent"] == 2 and first_day["totals"]["opened"] == 1


async def test_rows_by_period_fill_the_range_in_the_timezone(
    client: httpx.AsyncClient, tenant: Tenant, mail: dict[str, Any]
) -> None:
    body = await metrics(
        client, tenant, **RANGE, dimensions="period", metrics="sent,opened,open_rate",
        timezone="America/Los_Angeles",
    )  # fmt: skip
    assert body["metrics"] == ["sent", "opened", "open_rate"]
    rows = body["data"]
    assert [row["period"] for row in rows] == [f"2026-11-{day:02}" for day in range(2, 9)]
    assert set(rows[0]) == {"period", "sent", "opened", "open_rate"}
    # 09:00 UTC is 01:00 in Los Angeles: the same day; the range starts at its midnight.
    assert [row["sent"] for row in rows] == [2, 0, 1, 0, 0, 0, 0]
    weekly = await metrics(client, tenant, **RANGE, dimensions="period", granularity="weekly")
    assert [row["period"] for row in weekly["data"]] == ["2026-11-02"]
    hourly = await metrics(client, tenant, start_date="2026-11-02T08:00:00Z",
                           end_date="2026-11-02T11:00:00Z", dimensions="period",
                           granularity="hourly", timezone="Asia/Kolkata")  # fmt: skip
    assert [row["period"] for row in hourly["data"]] == [
        "2026-11-02T13:00:00+05:30", "2026-11-02T14:00:00+05:30", "2026-11-02T15:00:00+05:30",
        "2026-11-02T16:00:00+05:30",
    ]  # fmt: skip
    assert sum(row["sent"] for row in hourly["data"]) == 2


async def test_rows_by_domain_email_and_broadcast(
    client: httpx.AsyncClient, tenant: Tenant, mail: dict[str, Any]
) -> None:
    shop, news = mail["shop"], mail["news"]
    by_domain = await metrics(client, tenant, **RANGE, dimensions="domain",
                              metrics="sent,received")  # fmt: skip
    rows = {row["domain_name"]: row for row in by_domain["data"]}
    assert rows["shop.io"] == {"domain_id": shop.id, "domain_name": "shop.io", "sent": 2,
                               "received": 1}  # fmt: skip
    assert rows["news.io"]["sent"] == 1 and rows["news.io"]["received"] == 1
    only_news = await metrics(client, tenant, **RANGE, domain_id=news.id)
    assert only_news["totals"]["sent"] == 1 and only_news["totals"]["received"] == 1

    first, second, _third = mail["emails"]
    by_email = await metrics(client, tenant, **RANGE, dimensions="email", metrics="sent",
                             email_id=f"{first.id},{second.id}")  # fmt: skip
    assert sorted((row["email_id"], row["sent"]) for row in by_email["data"]) == sorted(
        [(first.id, 1), (second.id, 1)]
    )
    assert "received" not in by_email["totals"]

    by_broadcast = await metrics(client, tenant, **RANGE, dimensions="broadcast")
    [row] = by_broadcast["data"]
    assert row["broadcast_id"] == mail["campaign_id"]
    assert row["broadcast_name"] == "November news"
    assert (row["sent"], row["unsubscribed"], row["received"]) == (1, 1, 0)
    assert row["unsubscribe_rate"] == 1.0


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"granularity": "yearly"}, "granularity"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"start_date": "yesterday"}, "start_date"),
        ({"start_date": "2026-11-09", "end_date": "2026-11-02"}, "before"),
        ({"start_date": "2025-01-01", "end_date": "2026-11-02"}, "366"),
        ({"start_date": "2026-10-01", "end_date": "2026-11-02", "granularity": "hourly"}, "31"),
        ({"metrics": "sent,bogus"}, "bogus"),
        ({"dimensions": "email,broadcast"}, "combined"),
        ({"dimensions": "email", "broadcast_id": "x"}, "combined"),
        ({"email_id": ",".join(str(n) for n in range(101))}, "100"),
    ],
)
async def test_a_bad_query_is_a_422_naming_it(
    client: httpx.AsyncClient, tenant: Tenant, params: dict[str, str], words: str
) -> None:
    answer = await client.get("/emails/metrics", params=params, headers=tenant.headers)
    assert_error(answer, 422, "validation_error")
    assert words in answer.json()["message"]


async def test_defaults_are_the_last_seven_days_by_day_and_another_team_sees_nothing(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants, mail: dict[str, Any]
) -> None:
    body = await metrics(client, tenant, dimensions="period")
    assert len(body["data"]) == 7 and body["timezone"] == "UTC"
    other = await tenants.create()
    theirs = await metrics(client, other, **RANGE)
    assert theirs["totals"]["sent"] == 0 and theirs["totals"]["received"] == 0
