"""GET /usage: the team's use of its plan, in Resend's shape, over rolling windows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from mailbridge.clock import isoformat_ms
from mailbridge.storage.tables import Email
from tests.integration.sending import START, Sending, email
from tests.integration.test_auth import assert_error

pytestmark = pytest.mark.integration


async def test_usage_counts_what_the_quota_counts_and_says_when_it_falls(
    sending: Sending,
) -> None:
    sending.clock.advance(timedelta(minutes=20))  # 20 past the hour
    ids = []
    for to in (["ann@corp.io", "bob@corp.io"], ["cy@corp.io"]):
        answer = await sending.send(email(to=to))
        assert answer.status_code == 200, answer.text
        ids.append(answer.json()["id"])
    async with sending.context.database.session() as session:  # one of them has left
        await session.execute(
            update(Email).where(Email.id == ids[1]).values(sent_at=sending.clock.now())
        )
        await session.commit()
    contact = await sending.client.post(
        "/contacts", json={"email": "dee@corp.io"}, headers=sending.tenant.headers
    )
    assert contact.status_code in (200, 201)

    answer = await sending.client.get("/usage", headers=sending.tenant.headers)
    assert answer.status_code == 200, answer.text
    usage = answer.json()
    assert usage["object"] == "usage" and usage["plan"] == "free"
    hour = START.replace(minute=0, second=0, microsecond=0)
    assert usage["emails"]["daily"] == {
        "used": 3, "limit": 100, "sent": 1, "received": 0,
        "resets_at": isoformat_ms(hour + timedelta(hours=25)),
    }  # fmt: skip
    assert usage["emails"]["monthly"]["used"] == 3 and usage["emails"]["monthly"]["limit"] == 3000
    assert usage["emails"]["monthly"]["resets_at"] == isoformat_ms(
        hour + timedelta(days=30, hours=1)
    )
    assert usage["contacts"] == {"used": 1, "limit": None}
    assert usage["domains"] == {"used": 1, "limit": 1}
    assert usage["automation_runs"]["used"] == 0 and usage["automation_runs"]["limit"] == 3000
    assert usage["rate_limit"]["limit"] > 0 and usage["rate_limit"]["duration"].endswith("ms")

    # A day and an hour later the first hour has left the daily window, not the monthly.
    sending.clock.advance(timedelta(hours=25))
    later = (await sending.client.get("/usage", headers=sending.tenant.headers)).json()
    assert later["emails"]["daily"]["used"] == 0 and later["emails"]["monthly"]["used"] == 3
    other = await sending.tenants.create()
    theirs = (await sending.client.get("/usage", headers=other.headers)).json()
    assert theirs["emails"]["monthly"]["used"] == 0 and theirs["domains"]["used"] == 0
    assert_error(await sending.client.get("/usage"), 401, "missing_api_key")
