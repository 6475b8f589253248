"""Quotas (spec §8.1), Idempotency-Key, batches and batch_incomplete (§4.2, §7)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from mailbridge.cli.main import app as cli
from mailbridge.services import accounts
from mailbridge.services.accounts._quotas import bucket_of
from mailbridge.storage.tables import IdempotencyRecord, QuotaUsage, Team
from tests.integration.sending import Sending, email
from tests.integration.test_auth import assert_error


def fifty(prefix: str) -> list[str]:
    return [f"{prefix}{i}@corp.io" for i in range(50)]


async def test_daily_quota_is_rolling_24_hours(sending: Sending) -> None:
    assert (await sending.send(email(to=fifty("a")))).status_code == 200
    assert (await sending.send(email(to=fifty("b")))).status_code == 200
    over = await sending.send(email(to=["c@corp.io"]))
    assert_error(over, 429, "daily_quota_exceeded")
    assert await sending.count() == 2
    sending.clock.advance(timedelta(hours=23))
    assert_error(await sending.send(email(to=["c@corp.io"])), 429, "daily_quota_exceeded")
    sending.clock.advance(timedelta(hours=2))  # the first hour's bucket has left the window
    assert (await sending.send(email(to=["c@corp.io"]))).status_code == 200


async def test_the_operator_lifts_a_full_teams_quota_by_changing_its_plan(
    sending: Sending,
) -> None:
    """``mailbridge admin teams update --plan unlimited``: a self-hoster's way out of the
    free plan the first team is made on."""
    for prefix in "ab":
        assert (await sending.send(email(to=fifty(prefix)))).status_code == 200
    assert_error(await sending.send(email(to=["c@corp.io"])), 429, "daily_quota_exceeded")
    async with sending.context.database.session() as session:
        team = await session.get(Team, sending.tenant.team_id)
        assert team is not None
    settings = sending.context.settings
    env = {"MAILBRIDGE_DATABASE_URL": settings.resolved_database_url}
    if settings.database_schema:
        env["MAILBRIDGE_DATABASE_SCHEMA"] = settings.database_schema
    args = ["admin", "teams", "update", "--team", team.name]
    nothing = await asyncio.to_thread(CliRunner().invoke, cli, args, env=env)
    assert nothing.exit_code != 0 and "--plan" in nothing.output
    wrong = await asyncio.to_thread(CliRunner().invoke, cli, [*args, "--plan", "gold"], env=env)
    assert wrong.exit_code != 0 and "unknown plan" in wrong.output
    lifted = await asyncio.to_thread(
        CliRunner().invoke, cli, [*args, "--plan", "unlimited"], env=env
    )
    assert lifted.exit_code == 0, lifted.output
    assert json.loads(lifted.stdout)["plan"] == "unlimited"
    accounts.principal_cache(sending.context).clear()  # other processes: within a second
    assert (await sending.send(email(to=["c@corp.io"]))).status_code == 200


async def test_cc_and_bcc_count_and_suppressed_do_not(sending: Sending) -> None:
    body = email(to=fifty("a"), cc=fifty("b"), bcc=["x@example.com"])
    assert (await sending.send(body)).status_code == 200
    assert_error(await sending.send(email()), 429, "daily_quota_exceeded")


async def test_monthly_quota(sending: Sending) -> None:
    async with sending.context.database.session() as session:
        for day in range(2, 30):  # 2,968 recipients over days 2 to 29 before now
            session.add(QuotaUsage(
                team_id=sending.tenant.team_id,
                bucket_start=bucket_of(sending.clock.now() - timedelta(days=day)), count=106,
            ))  # fmt: skip
        await session.commit()
    assert (await sending.send(email(to=fifty("a")[:32]))).status_code == 200  # 3,000 exactly
    assert_error(await sending.send(email(to=["b@corp.io"])), 429, "monthly_quota_exceeded")
    sending.clock.advance(timedelta(days=2))  # day 29's bucket leaves the 30-day window
    assert (await sending.send(email(to=["b@corp.io"]))).status_code == 200
    assert await sending.count() == 2


async def test_concurrent_sends_cannot_overshoot(sending: Sending) -> None:
    bodies = [email(to=[f"r{n}-{i}@corp.io" for i in range(7)]) for n in range(30)]
    responses = await asyncio.gather(*(sending.send(body) for body in bodies))
    accepted = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code == 429]
    assert len(accepted) == 14 and len(refused) == 16  # 14 x 7 = 98 <= 100 < 105
    assert all(r.json()["name"] == "daily_quota_exceeded" for r in refused)
    assert await sending.count() == 14


async def test_idempotent_repeat_returns_the_first_answer(sending: Sending) -> None:
    first = await sending.send(email(), **{"Idempotency-Key": "order-1"})
    again = await sending.send(email(), **{"Idempotency-Key": "order-1"})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert await sending.count() == 1
    other = await sending.send(email(subject="Other"), **{"Idempotency-Key": "order-1"})
    assert_error(other, 409, "invalid_idempotent_request")
    assert await sending.count() == 1


@pytest.mark.parametrize("key", ["", "k" * 256])
async def test_key_length(sending: Sending, key: str) -> None:
    assert_error(await sending.send(email(), **{"Idempotency-Key": key}), 400,
                 "invalid_idempotency_key")  # fmt: skip
    assert await sending.count() == 0


async def test_a_key_still_in_flight_is_409(sending: Sending) -> None:
    async with sending.context.database.session() as session:
        from mailbridge.services.email._idempotency import fingerprint

        now = sending.clock.now()
        session.add(IdempotencyRecord(
            team_id=sending.tenant.team_id, key="busy", endpoint="emails",
            request_hash=fingerprint("emails", email()), state="in_progress",
            created_at=now, expires_at=now + timedelta(hours=24),
        ))  # fmt: skip
        await session.commit()
    assert_error(await sending.send(email(), **{"Idempotency-Key": "busy"}), 409,
                 "concurrent_idempotent_requests")  # fmt: skip
    sending.clock.advance(timedelta(minutes=6))  # the holder died: the key is taken over
    assert (await sending.send(email(), **{"Idempotency-Key": "busy"})).status_code == 200


async def test_concurrent_same_key_sends_once(sending: Sending) -> None:
    responses = await asyncio.gather(
        *(sending.send(email(), **{"Idempotency-Key": "race"}) for _ in range(5))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes.count(200) >= 1 and set(codes) <= {200, 409}
    assert await sending.count() == 1
    ids = {r.json()["id"] for r in responses if r.status_code == 200}
    assert len(ids) == 1


async def test_keys_expire_after_24_hours_and_failures_release_them(sending: Sending) -> None:
    first = await sending.send(email(), **{"Idempotency-Key": "daily"})
    sending.clock.advance(timedelta(hours=24, seconds=1))
    second = await sending.send(email(), **{"Idempotency-Key": "daily"})
    assert first.json()["id"] != second.json()["id"]
    bad = await sending.send(email(to=["nope"]), **{"Idempotency-Key": "fix-me"})
    assert_error(bad, 422, "invalid_to_address")
    fixed = await sending.send(email(), **{"Idempotency-Key": "fix-me"})
    assert fixed.status_code == 200


async def test_batch_sends_all_or_none(sending: Sending) -> None:
    ok = await sending.batch([email(to=["a@corp.io"]), email(to=["b@corp.io"])])
    assert ok.status_code == 200, ok.text
    ids = [item["id"] for item in ok.json()["data"]]
    assert len(ids) == 2 and {e.id for e in await sending.emails()} == set(ids)
    bad = await sending.batch([email(), email(to=["nope"]), email()])
    assert_error(bad, 422, "invalid_to_address")
    assert "emails[1]" in bad.json()["message"]
    missing = await sending.batch([email(), {"from": "a@shop.io", "subject": "x", "html": "y"}])
    assert_error(missing, 422, "missing_required_field")
    assert "[1].to" in missing.json()["message"]
    assert_error(await sending.batch([email()] * 101), 422, "validation_error")
    assert_error(await sending.batch([]), 422, "validation_error")
    assert await sending.count() == 2


async def test_batch_over_quota_queues_nothing(sending: Sending) -> None:
    items = [email(to=fifty(f"u{n}-")) for n in range(3)]
    assert_error(await sending.batch(items), 429, "daily_quota_exceeded")
    assert await sending.count() == 0


async def test_batch_idempotency(sending: Sending) -> None:
    items = [email(to=[f"x{i}@corp.io"]) for i in range(3)]
    first = await sending.batch(items, **{"Idempotency-Key": "b1"})
    again = await sending.batch(items, **{"Idempotency-Key": "b1"})
    assert first.json() == again.json() and await sending.count() == 3


@pytest.fixture
def tight_budget(sending: Sending) -> Sending:
    sending.context.settings.batch_time_budget = 1e-9
    return sending


async def test_batch_incomplete_without_a_key_is_422(tight_budget: Sending) -> None:
    items = [email(to=[f"x{i}@corp.io"]) for i in range(60)]
    response = await tight_budget.batch(items)
    assert_error_with_extra(response, 422)
    body = response.json()
    assert body["sent_count"] == 25 and len(body["sent"]) == 25
    assert {e.id for e in await tight_budget.emails()} == {item["id"] for item in body["sent"]}


async def test_batch_incomplete_with_a_key_is_503_and_replays(tight_budget: Sending) -> None:
    items = [email(to=[f"x{i}@corp.io"]) for i in range(60)]
    response = await tight_budget.batch(items, **{"Idempotency-Key": "big"})
    assert_error_with_extra(response, 503)
    assert int(response.headers["retry-after"]) >= 1
    replay = await tight_budget.batch(items, **{"Idempotency-Key": "big"})
    assert replay.status_code == 503 and replay.json() == response.json()
    assert await tight_budget.count() == 25


def assert_error_with_extra(response: object, status: int) -> None:
    import httpx

    assert isinstance(response, httpx.Response)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["statusCode"] == status and body["name"] == "batch_incomplete"
    assert set(body) == {"statusCode", "name", "message", "sent", "sent_count"}


async def test_idempotency_records_are_kept_per_team(sending: Sending) -> None:
    other = await sending.tenants.create()
    from tests.integration.sending import add_domain

    await add_domain(sending.context, other.team_id, "other.io")
    mine = await sending.send(email(), **{"Idempotency-Key": "shared"})
    theirs = await sending.client.post(
        "/emails", json=email(**{"from": "x@other.io"}),
        headers={**other.headers, "Idempotency-Key": "shared"},
    )  # fmt: skip
    assert mine.json()["id"] != theirs.json()["id"]
    async with sending.context.database.session() as session:
        keys = (await session.scalars(select(IdempotencyRecord.team_id))).all()
    assert len(keys) == 2
