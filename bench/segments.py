"""Resolve a segment over 100,000 contacts on SQLite, and compare with filtering in Python.

    .venv/bin/python bench/segments.py [--contacts 100000]

Prints the time and rows/s to resolve a segment with two property filters and
email_contains (target: <= 1 s on a 2-core machine), beside a baseline measured in the
same run: loading every contact of the audience into Python and filtering there.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from mailbridge.clock import SystemClock
from mailbridge.services.audiences import SegmentFilter
from mailbridge.services.audiences._segments import member_ids
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import Audience, Contact, ContactProperty, Segment, Team
from mailbridge.storage.types import new_id

PLANS = ["free", "pro", "team", "enterprise"]
DOMAINS = ["shop.io", "mail.net", "corp.example", "gmail.test", "acme.dev"]
FILTER = {
    "status": "subscribed",
    "email_contains": "shop",
    "property_filters": [
        {"key": "plan", "operator": "eq", "value": "pro"},
        {"key": "score", "operator": "gte", "value": 50},
    ],
}


def python_match(row: Any) -> bool:
    """The baseline: the same filter, evaluated in Python on loaded rows."""
    props = row.properties or {}
    return (
        not row.unsubscribed
        and "shop" in row.email
        and props.get("plan", "free") == "pro"
        and props.get("score") is not None
        and props["score"] >= 50
    )


async def build(database: Database, count: int) -> Segment:
    clock = SystemClock()
    now = clock.now()
    rng = random.Random(7)
    async with database.session() as session:
        team = Team(name="bench", plan="pro", created_at=now)
        session.add(team)
        await session.flush()
        audience = Audience(team_id=team.id, name="all", created_at=now)
        session.add(audience)
        session.add_all(
            [
                ContactProperty(
                    team_id=team.id,
                    key="plan",
                    type="string",
                    fallback_value="free",
                    created_at=now,
                    updated_at=now,
                ),
                ContactProperty(
                    team_id=team.id,
                    key="score",
                    type="number",
                    fallback_value=None,
                    created_at=now,
                    updated_at=now,
                ),
            ]
        )
        await session.flush()
        rows = [
            {
                "id": new_id(), "team_id": team.id, "audience_id": audience.id,
                "email": f"user{i}@{rng.choice(DOMAINS)}", "first_name": f"User{i}",
                "last_name": None, "unsubscribed": rng.random() < 0.1,
                "properties": {"plan": rng.choice(PLANS), "score": rng.randint(0, 100),
                               "city": rng.choice(["Oslo", "Lima", "Pune"])},
                "created_at": now, "updated_at": now,
            }
            for i in range(count)
        ]  # fmt: skip
        for start in range(0, count, 5_000):
            await session.execute(insert(Contact), rows[start : start + 5_000])
        segment = Segment(
            team_id=team.id,
            audience_id=audience.id,
            name="bench",
            filter=SegmentFilter.model_validate(FILTER).stored(),
            created_at=now,
            updated_at=now,
        )
        session.add(segment)
        await session.commit()
        return segment


async def main(count: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await asyncio.to_thread(upgrade, url)
        database = Database(url)
        try:
            started = time.perf_counter()
            segment = await build(database, count)
            print(f"built {count:,} contacts in {time.perf_counter() - started:.1f} s")
            sql_times, python_times = [], []
            sql_members: list[str] = []
            for _ in range(repeats):
                async with database.session() as session:
                    t0 = time.perf_counter()
                    sql_members = await member_ids(session, segment)
                    sql_times.append(time.perf_counter() - t0)
                async with database.session() as session:
                    t0 = time.perf_counter()
                    rows = (
                        await session.execute(
                            select(
                                Contact.id, Contact.email, Contact.unsubscribed, Contact.properties
                            ).where(Contact.audience_id == segment.audience_id)
                        )
                    ).all()
                    python_members = [row.id for row in rows if python_match(row)]
                    python_times.append(time.perf_counter() - t0)
            assert sorted(sql_members) == sorted(python_members), "SQL and Python disagree"
            sql_s, py_s = statistics.median(sql_times), statistics.median(python_times)
            print(f"segment: 2 property filters + email_contains, {len(sql_members):,} members")
            print(
                f"resolve in SQL     : {sql_s * 1000:8.1f} ms  {count / sql_s:12,.0f} rows/s"
                f"  (target <= 1000 ms)"
            )
            print(f"baseline in Python : {py_s * 1000:8.1f} ms  {count / py_s:12,.0f} rows/s")
            print(f"ratio (python / sql): {py_s / sql_s:.2f}x")
        finally:
            await database.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--contacts", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.contacts, arguments.repeats))
