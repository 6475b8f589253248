"""Search an inbox of 100,000 messages on SQLite (FTS5), beside a LIKE scan of the same
rows measured in the same run.

    .venv/bin/python -m bench.inbox_search [--messages 100000] [--others 0]

Seeds one inbox with ``--messages`` messages in threads of four (subjects, senders and
bodies made of a 2,000-word vocabulary plus a few rare words), then times what
``GET /inboxes/:id/threads/search`` runs — the full-text match as a subquery of the
thread list, one page of 20, and the page's best-matching messages — for common, rare,
two-word, prefix and sender queries: the median and the worst of 5 runs each. Baseline:
the same words found with ``LIKE '%word%'`` over the stored bodies (what the issue
rules out). Target: <= 200 ms a search.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, text

from mailbridge.clock import SystemClock
from mailbridge.services import accounts, inboxes
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.pagination import PageRequest
from mailbridge.storage.tables import Domain, Inbox, InboxThread
from mailbridge.storage.types import new_id

LETTERS = "abcdefghijklmnopqrstuvwxyz"
RARE = ["zircon", "quokka", "marmalade", "tangerine", "obsidian"]


async def seed(database: Database, count: int, others: int) -> tuple[Inbox, list[str]]:
    """The searched inbox with ``count`` messages, and another team's with ``others``
    (the same words: its rows match the same queries, and are filtered out)."""
    rng = random.Random(7)
    # Words of 4 to 9 letters, like a language's (numbered words would share prefixes).
    vocabulary = ["".join(rng.choices(LETTERS, k=rng.randint(4, 9))) for _ in range(2000)]
    inbox = await _seed_inbox(database, rng, vocabulary, "shop.io", count)
    if others:
        await _seed_inbox(database, rng, vocabulary, "other.io", others)
    return inbox, vocabulary


async def _seed_inbox(
    database: Database, rng: random.Random, vocabulary: list[str], domain_name: str, count: int
) -> Inbox:
    clock = SystemClock()
    now = datetime.now(UTC)
    address = f"support@{domain_name}"
    async with database.session() as session:
        team = await accounts.create_team(session, clock, domain_name, "pro")
        domain = Domain(
            id=new_id(), team_id=team.id, name=domain_name, status="verified", receiving=True,
            dkim_selector="mailbridge", dkim_private_key="", dkim_public_key="",
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(domain)
        await session.flush()
        inbox = Inbox(
            id=new_id(), team_id=team.id, domain_id=domain.id, email_address=address,
            name="Support", forwarding=False, agent_actions=[], created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(inbox)
        await session.commit()
    threads, rows = [], []
    for start in range(0, count, 4):
        thread_id = new_id()
        subject = " ".join(rng.choices(vocabulary, k=4))
        sender = f"customer{rng.randrange(5000)}@mail.net"
        at = now - timedelta(minutes=start)
        threads.append({
            "id": thread_id, "team_id": team.id, "inbox_id": inbox.id, "subject": subject,
            "subject_key": subject, "correspondent_domain": "mail.net", "from_address": sender,
            "to": [address], "cc": [], "folder": "inbox", "read": False,
            "email_count": 4, "has_attachment": False, "latest_at": at, "created_at": at,
            "updated_at": at,
        })  # fmt: skip
        for _ in range(min(4, count - start)):
            words = rng.choices(vocabulary, k=60)
            if rng.random() < 0.001:
                words.append(rng.choice(RARE))
            rows.append({
                "message_id": new_id(), "thread_id": thread_id, "inbox_id": inbox.id,
                "subject": subject, "sender": sender, "recipients": address,
                "body": " ".join(words), "scope": inboxes.search_scope(inbox.id),
            })  # fmt: skip
    async with database.session() as session:
        for chunk in range(0, len(threads), 5000):
            await session.execute(insert(InboxThread), threads[chunk : chunk + 5000])
        statement = text(
            "INSERT INTO inbox_search (message_id, thread_id, inbox_id, subject, sender, "
            "recipients, body, scope) VALUES (:message_id, :thread_id, :inbox_id, :subject, "
            ":sender, :recipients, :body, :scope)"
        )
        for chunk in range(0, len(rows), 5000):
            await session.execute(statement, rows[chunk : chunk + 5000])
        await session.commit()
    return inbox


def queries(vocabulary: list[str]) -> dict[str, dict[str, object]]:
    return {
        "common word": {"query": vocabulary[17]},
        "rare word": {"query": "quokka"},
        "two words": {"query": f"{vocabulary[3]} {vocabulary[42]}"},
        "prefix": {"query": "marma"},
        "sender": {"query": None, "from": ["customer77@mail.net"]},
    }


async def search(database: Database, inbox: Inbox, query: dict[str, object]) -> int:
    """What the search route runs; the threads on the page."""
    async with database.session() as session:
        addresses = {"from": list(query.get("from", []))}  # type: ignore[call-overload]
        match = inboxes.search_match(session, inbox.id, query.get("query"), addresses)  # type: ignore[arg-type]
        assert match is not None
        found = await inboxes.list_threads(
            session, inbox, PageRequest(limit=20), where=[InboxThread.id.in_(match.threads())]
        )
        await match.best(session, [thread.id for thread in found.items])
        return len(found.items)


async def like(database: Database, word: str) -> int:
    async with database.session() as session:
        rows = await session.execute(
            text("SELECT DISTINCT thread_id FROM inbox_search WHERE body LIKE :word LIMIT 20"),
            {"word": f"%{word}%"},
        )
        return len(rows.all())


async def timed(call: object, runs: int = 5) -> tuple[float, float, int]:
    times, found = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        found = await call()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times), found


async def measure(count: int, others: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}"
        await asyncio.to_thread(upgrade, url)
        database = Database(url)
        try:
            started = time.perf_counter()
            inbox, vocabulary = await seed(database, count, others)
            beside = f", another team's {others:,} beside" if others else ""
            print(f"inbox search, {count:,} messages in {count // 4:,} threads{beside}, "
                  f"SQLite FTS5 (seeded in {time.perf_counter() - started:.1f} s):")  # fmt: skip
            for name, query in queries(vocabulary).items():
                median, worst, found = await timed(lambda q=query: search(database, inbox, q))
                print(f"  {name:12} {median:7.1f} ms median, {worst:7.1f} ms worst  "
                      f"({found} threads on the page)")  # fmt: skip
            for word in (vocabulary[17], "quokka"):
                median, worst, found = await timed(lambda w=word: like(database, w))
                print(f"  baseline LIKE '%{word}%' {median:7.1f} ms median, {worst:7.1f} ms "
                      f"worst ({found} threads)")  # fmt: skip
            print("  target: <= 200 ms a search")
        finally:
            await database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument(
        "--others", type=int, default=0, help="messages of another team's inbox beside it"
    )
    arguments = parser.parse_args()
    asyncio.run(measure(arguments.messages, arguments.others))


if __name__ == "__main__":
    main()
