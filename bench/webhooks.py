"""Signed webhook deliveries/s to a minimal local receiver, SQLite; enqueue-to-2xx latency;
and a baseline.

    .venv/bin/python -m bench.webhooks [--events 10000] [--concurrency 128] [--rate 500]
                                       [--seconds 5]

Throughput: seeds N activity events (``email.delivered``, undispatched, as the services
record them; ``--per-email k``: k events of each email, which go out in order, one after
another) for a team with one subscribed webhook, in a fresh SQLite database, starts
the activity dispatcher and the webhook worker as ``mailbridge runner`` builds them
(the worker POSTs with ``mail.http_post.AiohttpPoster``: an aiohttp ``ClientSession``
over a keep-alive ``TCPConnector``), and times from their start until the receiver
(``bench.webhook_sink``, a process of its own) has answered every request and every
delivery row is ``succeeded``: fan-out, claim, signing, POST, outcome written.

Latency: with fresh workers running in a ``Runner``, events are recorded at a steady
rate in small transactions (as API requests record them) for a few seconds; per
delivery, enqueue-to-2xx is its ``completed_at`` (stamped once the 2xx is in, when the
outcome is written) minus the event's ``created_at``. Twice: *woken* (the recording
process calls ``Runner.notify``, as the email writer does) and *polled* (nobody tells
the runner: found at its next look, at most 250 ms later — events recorded by another
process).

Baseline, in the same run against the same receiver: the same bodies with the same
signed headers POSTed with a plain ``httpx.AsyncClient`` (its default transport), no
database, with the runner's concurrency and with 8 connections (httpcore's pool slows
down as it grows); the better of the two is the baseline. For reference, the aiohttp
poster alone, called as the sender calls it. Target on a 2-core machine: >= 2,000
signed deliveries/s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import func, insert, select

from bench.webhook_sink import ReceiverProcess
from mailbridge.clock import SystemClock, isoformat_ms
from mailbridge.config import Settings
from mailbridge.mail.http_post import AiohttpPoster
from mailbridge.mail.targets import PinnedTarget, pin
from mailbridge.runner import Runner
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services import accounts, webhooks
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.services.webhooks import default_consumers
from mailbridge.storage.database import Database
from mailbridge.storage.migrate import upgrade
from mailbridge.storage.tables import ActivityEvent, WebhookDelivery
from mailbridge.storage.types import new_id
from mailbridge.webhooks import signed_headers

EVENT = "email.delivered"
FEW_CONNECTIONS = 8


@dataclass(frozen=True)
class Latency:
    mode: str
    deliveries: int
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class Figures:
    events: int
    concurrency: int
    delivered_per_second: float
    outcome_commits: int
    plain_httpx: dict[int, float]  # POSTs/s by connections
    poster_per_second: float
    rate: int
    latencies: list[Latency]
    per_email: int = 1

    @property
    def baseline_per_second(self) -> float:
        """Plain httpx at its better setting."""
        return max(self.plain_httpx.values())

    @property
    def ratio(self) -> float:
        return self.delivered_per_second / self.baseline_per_second


def event_data(number: int, email_id: str | None = None) -> dict[str, object]:
    """What ``email.delivered`` activity carries (``services.email_events.activity_data``)."""
    return {
        "email_id": email_id or new_id(), "from": "Shop <receipts@shop.io>",
        "to": [f"customer{number}@mail.net"], "subject": f"Receipt #{number}",
        "created_at": isoformat_ms(SystemClock().now()), "tags": [{"name": "kind",
        "value": "receipt"}],
    }  # fmt: skip


def workers(context: ServiceContext) -> tuple[WebhookWorker, ActivityDispatcher]:
    """As ``runner.default_workers`` builds them."""
    write_lock = asyncio.Lock()
    worker = WebhookWorker(context, write_lock=write_lock)
    consumers = default_consumers(context, on_webhook_deliveries=worker.deliveries_added)
    return worker, ActivityDispatcher(context, consumers, write_lock=write_lock)


async def seed(
    context: ServiceContext, endpoint: str, count: int, per_email: int = 1
) -> tuple[str, str]:
    """A team with one webhook and ``count`` undispatched events, ``per_email`` of each
    email in a row (delivered in their order, one after another): (team id, secret)."""
    clock = context.clock
    async with context.database.session() as session:
        team = await accounts.create_team(session, clock, "bench", "pro")
        hook = await webhooks.create_webhook(
            session, clock, context.settings, team.id, endpoint, [EVENT]
        )
    now = clock.now()
    emails = [new_id() for _ in range(0, count, per_email)]
    rows = [
        {"id": new_id(), "team_id": team.id, "type": EVENT,
         "data": event_data(number, emails[number // per_email]), "created_at": now}
        for number in range(count)
    ]  # fmt: skip
    async with context.database.session() as session:
        await session.execute(insert(ActivityEvent), rows)
        await session.commit()
    return team.id, hook.secret


async def succeeded(context: ServiceContext) -> int:
    async with context.database.session() as session:
        query = select(func.count()).where(WebhookDelivery.status == "succeeded")
        return int(await session.scalar(query) or 0)


async def run_throughput(
    context: ServiceContext, receiver: ReceiverProcess, count: int
) -> tuple[float, int]:
    worker, dispatcher = workers(context)
    stopping = asyncio.Event()
    started = time.perf_counter()
    tasks = [asyncio.create_task(w.run(stopping)) for w in (worker, dispatcher)]
    await receiver.wait_for(count)
    while await succeeded(context) < count:
        await asyncio.sleep(0.002)
    elapsed = time.perf_counter() - started
    stopping.set()
    await asyncio.gather(*tasks)
    return elapsed, worker.record_commits


async def run_latency(
    context: ServiceContext, team_id: str, rate: int, seconds: float, *, woken: bool
) -> list[float]:
    """Record ``rate`` events a second for ``seconds``; enqueue-to-2xx of each, in ms."""
    worker, dispatcher = workers(context)
    runner = Runner(context, workers=[worker, dispatcher], ticks=[])
    await runner.start_in_background()
    ids: list[str] = []
    tick = 0.01  # a small transaction every 10 ms, as API requests would record them
    per_tick = max(1, round(rate * tick))
    try:
        started = time.perf_counter()
        for number in range(round(seconds / tick)):
            async with context.database.session() as session:
                events = [
                    record_event(session, context.clock, team_id, EVENT, event_data(n))
                    for n in range(per_tick)
                ]
                await session.commit()
            ids += [event.id for event in events]
            if woken:
                runner.notify()
            pause = started + (number + 1) * tick - time.perf_counter()
            if pause > 0:
                await asyncio.sleep(pause)
        while True:
            async with context.database.session() as session:
                done = await session.scalar(
                    select(func.count()).where(
                        WebhookDelivery.event_id.in_(ids), WebhookDelivery.status == "succeeded"
                    )
                )
            if done == len(ids):
                break
            await asyncio.sleep(0.05)
    finally:
        await runner.stop()
    async with context.database.session() as session:
        rows = await session.execute(
            select(WebhookDelivery.completed_at, ActivityEvent.created_at)
            .join(ActivityEvent, ActivityEvent.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.event_id.in_(ids))
        )
        return [
            (done - created).total_seconds() * 1000
            for done, created in rows.tuples()
            if done is not None
        ]


def percentile(values: list[float], fraction: float) -> float:
    return statistics.quantiles(values, n=1000, method="inclusive")[round(fraction * 1000) - 1]


async def post_all(
    client: httpx.AsyncClient, url: str, requests: list[tuple[bytes, dict[str, str]]], workers: int
) -> float:
    queue = list(reversed(requests))

    async def sender() -> None:
        while queue:
            body, headers = queue.pop()
            response = await client.post(url, content=body, headers=headers)
            assert response.status_code == 200

    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(workers)))
    return time.perf_counter() - started


async def signed_requests(
    context: ServiceContext, secret: str, count: int
) -> list[tuple[bytes, dict[str, str]]]:
    """The bodies the runner sent, with headers signed the same way."""
    async with context.database.session() as session:
        rows = await session.execute(
            select(WebhookDelivery.body, WebhookDelivery.event_id).limit(count)
        )
        pairs = list(rows.tuples())
    timestamp = int(context.clock.now().timestamp())
    requests = []
    for body, event_id in pairs:
        raw = body.encode()
        headers = {"Content-Type": "application/json", "User-Agent": "bench"}
        headers.update(signed_headers(secret, timestamp, raw, event_id))
        requests.append((raw, headers))
    return requests


async def run_baselines(
    context: ServiceContext, receiver: ReceiverProcess, secret: str, count: int, concurrency: int
) -> tuple[dict[int, float], float]:
    """Plain httpx at the runner's concurrency and at a few connections (httpcore's pool
    slows down as it grows): POSTs/s by connections; then the aiohttp poster alone."""
    requests = await signed_requests(context, secret, count)
    plain_rates = {}
    for connections in sorted({FEW_CONNECTIONS, concurrency}):
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(limits=limits, trust_env=False) as plain:
            elapsed = await post_all(plain, receiver.url(), requests, connections)
        plain_rates[connections] = len(requests) / elapsed
    target = await pin(receiver.url(), allow_private=True)
    poster = AiohttpPoster()
    try:
        elapsed = await post_all_with(poster, target, requests, concurrency)
    finally:
        await poster.aclose()
    return plain_rates, len(requests) / elapsed


async def post_all_with(
    poster: AiohttpPoster,
    target: PinnedTarget,
    requests: list[tuple[bytes, dict[str, str]]],
    workers: int,
) -> float:
    """``post_all`` through a poster, as ``WebhookSender`` posts."""
    queue = list(reversed(requests))

    async def sender() -> None:
        while queue:
            body, headers = queue.pop()
            status, _content = await poster.post(target, {**target.headers, **headers}, body)
            assert status == 200

    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(workers)))
    return time.perf_counter() - started


async def measure(
    events: int = 10000,
    concurrency: int = 128,
    batch: int = 200,
    rate: int = 500,
    seconds: float = 5.0,
    per_email: int = 1,
) -> Figures:
    with tempfile.TemporaryDirectory() as directory:
        receiver = ReceiverProcess()
        receiver.start()
        try:
            settings = Settings(
                data_dir=Path(directory),
                webhook_allow_private=True,
                webhook_concurrency=concurrency,
                webhook_batch_size=batch,
            )
            await asyncio.to_thread(upgrade, settings.resolved_database_url)
            context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
            try:
                team_id, secret = await seed(context, receiver.url(), events, per_email)
                elapsed, commits = await run_throughput(context, receiver, events)
                plain_httpx, poster = await run_baselines(
                    context, receiver, secret, events, concurrency
                )
                latencies = []
                for mode in ("woken", "polled"):
                    values = await run_latency(
                        context, team_id, rate, seconds, woken=mode == "woken"
                    )
                    latencies.append(
                        Latency(
                            mode, len(values), percentile(values, 0.5), percentile(values, 0.99)
                        )
                    )
            finally:
                await context.database.dispose()
        finally:
            receiver.stop()
    return Figures(
        events, concurrency, events / elapsed, commits, plain_httpx, poster, rate, latencies,
        per_email,
    )  # fmt: skip


def report(figures: Figures) -> str:
    lines = [
        f"webhooks to a minimal local receiver, {figures.events} events, SQLite, "
        f"{figures.concurrency} in flight, {figures.per_email} event(s) an email:",
        f"  mailbridge runner     {figures.delivered_per_second:8.0f} signed deliveries/s"
        f"   (fan-out, claim, sign, POST, outcome; {figures.outcome_commits} outcome commits)",
        f"  baseline              {figures.baseline_per_second:8.0f} POSTs/s"
        "   (plain httpx.AsyncClient, same bodies and headers, no database; "
        + ", ".join(f"{rate:.0f}/s with {n}" for n, rate in sorted(figures.plain_httpx.items()))
        + " connections)",
        f"  ratio                 {figures.ratio:8.2f}x   (target: >= 2,000 deliveries/s)",
        f"  aiohttp poster        {figures.poster_per_second:8.0f} POSTs/s"
        "   (mailbridge's poster alone, no database)",
    ]
    lines.extend(
        f"  enqueue-to-2xx, {latency.mode:6}  p50 {latency.p50_ms:6.1f} ms  "
        f"p99 {latency.p99_ms:6.1f} ms   ({latency.deliveries} events at {figures.rate}/s)"
        for latency in figures.latencies
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--rate", type=int, default=500, help="events/s in the latency runs")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--per-email", type=int, default=1,
        help="events of one email in the throughput run (delivered one after another)",
    )  # fmt: skip
    arguments = parser.parse_args()
    figures = asyncio.run(
        measure(
            arguments.events,
            arguments.concurrency,
            arguments.batch,
            arguments.rate,
            arguments.seconds,
            arguments.per_email,
        )
    )
    print(report(figures))


if __name__ == "__main__":
    main()
