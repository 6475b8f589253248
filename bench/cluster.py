"""Many processes over one PostgreSQL, under load and faults: is anything lost or repeated?

    .venv/bin/python -m bench.cluster [--seconds 90] [--contacts 20000] [--no-pg-restart]

On loopback: a fresh PostgreSQL database on the local server, Redis (the shared send
rate limit), 2 ``mailbridge api`` processes (the load generator round-robins between
them), 3 ``mailbridge runner`` processes, 1 ``mailbridge inbound`` listener, an SMTP sink
and a webhook receiver that write down every Message-ID and event id they get
(``bench.cluster_sinks``). For ``--seconds``: POST /emails and /emails/batch, POST
/events/send driving a 5-step automation, one campaign to ``--contacts`` recipients,
and inbound messages — while a fault injector SIGKILLs a random runner or API process
every few seconds (and starts it again), and PostgreSQL is restarted once half way.
Then the load stops, the faults stop, the work drains, and the bench prints:

- emails accepted (by the API, by the campaign, by the automation) vs messages at the
  sink: lost, duplicated;
- runs started vs completed;
- webhook events vs deliveries received: lost, duplicated;
- inbound messages acknowledged (250) vs stored;
- POST /emails latency p50/p99 outside the PostgreSQL restart window, and the answers
  it got (a 5xx during the outage is counted, not hidden); the same as the APIs timed it
  (their request log), and by 10-second window beside the faults of that window;
- for any email lost or sent twice, what the database says of it;
- the ``/metrics`` families with their samples, once during the load and once after.

Targets (issue 7 of 7): 0 lost, 0 duplicated sends, 0 lost webhooks, p99 of POST
/emails <= 100 ms outside the restart window. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import aiosmtplib
import asyncpg
import httpx

from bench.cluster_sinks import Recorder
from bench.smtp_sink import free_port
from tests.integration.dns_server import ThreadedDnsServer

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/test"
SENDING = "shop.io"
RECEIVING = "inbox.shop.io"
INBOUND_SENDER = "ann@corp.io"
STARTUP_TIMEOUT = 60.0


@dataclass
class Process:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    port: int | None = None
    popen: subprocess.Popen[bytes] | None = None
    kills: int = 0
    nice: int = 0  # background work (runners, the listener) yields the CPU to the API

    def start(self) -> None:
        with self.log.open("ab") as handle:
            self.popen = subprocess.Popen(
                self.argv, env=self.env, stdout=handle, stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None,
            )  # fmt: skip

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)
            self.kills += 1

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()


@dataclass
class Load:
    """What the load generator saw."""

    accepted: set[str] = field(default_factory=set)  # email ids answered 200
    answers: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (start, seconds)
    events_accepted: int = 0
    inbound_acknowledged: collections.Counter[str] = field(default_factory=collections.Counter)
    outage: tuple[float, float] | None = None
    kills: list[tuple[float, str]] = field(default_factory=list)  # (when, process name)
    kill_clock: list[str] = field(default_factory=list)  # "HH:MM:SS.ffffff name", UTC


def _mailbridge(*args: str) -> list[str]:
    return [sys.executable, "-m", "mailbridge", *args]


async def _admin(sql: str) -> None:
    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def _run(argv: list[str], env: dict[str, str]) -> str:
    return subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout


async def _seed(env: dict[str, str], contacts: int) -> dict[str, str]:
    """A team with both domains, an audience of ``contacts``, a template, a segment, the
    automation and the webhook; the ids the load needs, and its API key."""
    from mailbridge.clock import SystemClock
    from mailbridge.config import Settings
    from mailbridge.services import accounts
    from mailbridge.services.domains import DomainOptions, create_domain
    from mailbridge.services.kernel import ServiceContext
    from mailbridge.storage.database import Database

    _run(_mailbridge("db", "upgrade"), env)
    settings = Settings(
        data_dir=Path(env["MAILBRIDGE_DATA_DIR"]), database_url=env["MAILBRIDGE_DATABASE_URL"]
    )
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    try:
        async with context.database.session() as session:
            team = await accounts.create_team(session, context.clock, "cluster", "unlimited")
            for name, options in ((SENDING, DomainOptions()),
                                  (RECEIVING, DomainOptions(receiving=True))):  # fmt: skip
                await create_domain(
                    session, context.clock, settings, team.id, name, options, verified=True
                )
            await session.commit()
            _key, token = await accounts.create_api_key(session, context.clock, team.id, "load")
    finally:
        await context.database.dispose()
    api = httpx.AsyncClient(
        base_url=env["BENCH_API"], headers={"authorization": f"Bearer {token}"}, timeout=60
    )
    async with api:

        async def post(path: str, body: Any, ok: tuple[int, ...] = (200, 201, 202)) -> Any:
            answer = await api.post(path, json=body)
            if answer.status_code not in ok:
                raise RuntimeError(f"{path}: {answer.status_code} {answer.text[:300]}")
            return answer.json()

        audience = await post("/audiences", {"name": "newsletter"})
        users = await post("/audiences", {"name": "users"})
        for audience_id, prefix, count in ((audience["id"], "reader", contacts),
                                           (users["id"], "user", 2000)):  # fmt: skip
            for start in range(0, count, 100):
                batch = [{"email": f"{prefix}{n}@mail.net"}
                         for n in range(start, min(count, start + 100))]  # fmt: skip
                await post("/contacts/batch", {"audience_id": audience_id, "contacts": batch})
        template = await post("/templates", {
            "name": "welcome", "from": f"Shop <news@{SENDING}>", "subject": "Welcome",
            "html": "<p>Hi {{{contact.email}}}</p>",
        })  # fmt: skip
        await post(f"/templates/{template['id']}/publish", {})
        done = {"type": "rule", "field": "last_name", "operator": "eq", "value": "Done"}
        segment = await post(
            "/segments", {"name": "welcomed", "audience_id": users["id"], "filter": done}
        )
        steps = [
            {"key": "start", "type": "trigger", "config": {"event_name": "signed_up"}},
            {"key": "welcome", "type": "send_email",
             "config": {"template": {"id": template["id"]}}},
            {"key": "greet", "type": "contact_update", "config": {"first_name": "Greeted"}},
            {"key": "check", "type": "condition",
             "config": {"type": "rule", "field": "contact.first_name", "operator": "eq",
                        "value": "Greeted"}},
            {"key": "mark", "type": "contact_update", "config": {"last_name": "Done"}},
            {"key": "join", "type": "add_to_segment", "config": {"segment_id": segment["id"]}},
        ]  # fmt: skip
        connections = [
            {"from": "start", "to": "welcome"}, {"from": "welcome", "to": "greet"},
            {"from": "greet", "to": "check"},
            {"from": "check", "to": "mark", "type": "condition_met"},
            {"from": "mark", "to": "join"},
        ]  # fmt: skip
        await post("/automations", {"name": "onboarding", "audience_id": users["id"],
                                    "domain": SENDING, "status": "enabled", "steps": steps,
                                    "connections": connections})  # fmt: skip
        await post("/webhooks", {"endpoint": env["BENCH_HOOKS"],
                                 "events": ["email.delivered", "email.received"]})  # fmt: skip
        campaign = await post("/campaigns", {
            "name": "big", "from": f"Shop <news@{SENDING}>", "subject": "News",
            "html": "<p>Hello</p>", "audience_id": audience["id"],
        })  # fmt: skip
    return {"token": token, "campaign": campaign["id"], "users": users["id"]}


async def _send_load(ports: list[int], token: str, load: Load, until: float) -> None:
    clients = [
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"authorization": f"Bearer {token}"})
        for port in ports
    ]  # fmt: skip
    turn = 0

    async def one(number: int) -> None:
        nonlocal turn
        client = clients[turn % len(clients)]
        turn += 1
        batch = number % 10 == 0
        body: Any = {"from": f"Shop <hi@{SENDING}>", "to": [f"c{number}@mail.net"],
                     "subject": f"Order {number}", "text": "Thanks."}  # fmt: skip
        if batch:
            body = [{**body, "to": [f"c{number}-{k}@mail.net"]} for k in range(10)]
        started = time.monotonic()
        path = "/emails/batch" if batch else "/emails"
        try:
            try:
                answer = await client.post(path, json=body)
            except httpx.ConnectError:
                # That API process is down (killed, restarting): as a load balancer would,
                # the request goes to the other one.
                load.answers["failed over"] += 1
                answer = await clients[turn % len(clients)].post(path, json=body)
        except httpx.HTTPError as exc:
            load.answers[f"transport:{type(exc).__name__}"] += 1
            return
        if not batch:
            load.latencies.append((started, time.monotonic() - started))
        load.answers[str(answer.status_code)] += 1
        if answer.status_code == 200:
            data = answer.json()
            for item in data.get("data", []) if batch else [data]:
                load.accepted.add(item["id"])

    number = 0
    pending: set[asyncio.Task[None]] = set()
    while time.monotonic() < until:
        for _ in range(4):  # ~40 requests/s
            task = asyncio.create_task(one(number))
            pending.add(task)
            task.add_done_callback(pending.discard)
            number += 1
        await asyncio.sleep(0.1)
    await asyncio.gather(*pending)
    for client in clients:
        await client.aclose()


async def _event_load(ports: list[int], token: str, load: Load, until: float) -> None:
    clients = [
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"authorization": f"Bearer {token}"})
        for port in ports
    ]  # fmt: skip
    number = 0
    while time.monotonic() < until and number < 2000:
        client = clients[number % len(clients)]
        try:
            answer = await client.post(
                "/events/send", json={"event": "signed_up", "email": f"user{number}@mail.net"}
            )
            if answer.status_code in (200, 202):
                load.events_accepted += 1
                number += 1
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.1)
    for client in clients:
        await client.aclose()


def _inbound_message(number: int) -> tuple[str, bytes]:
    message = EmailMessage()
    message["From"] = f"Ann <{INBOUND_SENDER}>"
    message["To"] = f"m{number}@{RECEIVING}"
    message["Subject"] = f"Question {number}"
    message["Message-ID"] = f"<cluster-{number}@corp.io>"
    message.set_content("A question, as people write them.\n" * 20)
    return message["Message-ID"], message.as_bytes()


async def _inbound_load(port: int, load: Load, until: float) -> None:
    number = 0
    while time.monotonic() < until:
        message_id, content = _inbound_message(number)
        while time.monotonic() < until + 60:
            try:
                await aiosmtplib.send(content, hostname="127.0.0.1", port=port, timeout=10,
                                      sender=INBOUND_SENDER,
                                      recipients=[f"m{number}@{RECEIVING}"])  # fmt: skip
                load.inbound_acknowledged[message_id] += 1
                break
            except (aiosmtplib.SMTPException, OSError, TimeoutError):
                await asyncio.sleep(0.2)
        number += 1
        await asyncio.sleep(0.2)


async def _faults(victims: list[Process], load: Load, until: float, restart_pg: bool) -> None:
    rng = random.Random()
    restart_at = time.monotonic() + (until - time.monotonic()) / 2 if restart_pg else None
    while time.monotonic() < until:
        await asyncio.sleep(rng.uniform(3, 6))
        if restart_at is not None and time.monotonic() >= restart_at:
            restart_at = None
            began = time.monotonic()
            version = sorted(os.listdir("/etc/postgresql"))[0]
            await asyncio.to_thread(
                subprocess.run,
                ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
                check=True, capture_output=True,
            )  # fmt: skip
            load.outage = (began - 1.0, time.monotonic() + 5.0)
            continue
        victim = rng.choice(victims)
        load.kills.append((time.monotonic(), victim.name))
        load.kill_clock.append(f"{datetime.now(UTC):%H:%M:%S.%f} {victim.name}")
        await asyncio.to_thread(victim.kill)
        victim.start()


async def _count(sql: str, dsn: str) -> Any:
    connection = await asyncpg.connect(dsn)
    try:
        return await connection.fetch(sql)
    finally:
        await connection.close()


async def _drained(dsn: str) -> dict[str, int]:
    rows = await _count(
        "SELECT 'emails_pending' AS what, count(*) AS n FROM emails "
        "WHERE status IN ('queued', 'scheduled', 'sent', 'delivery_delayed') "
        "UNION ALL SELECT 'runs_running', count(*) FROM automation_runs WHERE status = 'running' "
        "UNION ALL SELECT 'hooks_pending', count(*) FROM webhook_deliveries "
        "WHERE status = 'pending' "
        "UNION ALL SELECT 'recipients_pending', count(*) FROM campaign_recipients "
        "WHERE email_id IS NULL",
        dsn,
    )
    return {row["what"]: int(row["n"]) for row in rows}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


async def main(seconds: float, contacts: int, restart_pg: bool) -> int:
    folder = Path(tempfile.mkdtemp(prefix="mailbridge-cluster-"))
    database = f"mb_cluster_{uuid.uuid4().hex[:8]}"
    await _admin(f'CREATE DATABASE "{database}"')
    dsn = f"postgresql://postgres@127.0.0.1:5432/{database}"
    dns = ThreadedDnsServer()
    dns.zone.add_txt("_dmarc.corp.io", "v=DMARC1; p=none")
    dns.start()
    smtp = Recorder("smtp", free_port(), folder / "sink.txt")
    hooks = Recorder("webhooks", free_port(), folder / "hooks.txt")
    smtp.start()
    hooks.start()
    api_ports = [free_port(), free_port()]
    inbound_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env.update({
        "MAILBRIDGE_DATA_DIR": str(folder / "var"),
        "MAILBRIDGE_DATABASE_URL": f"postgresql+asyncpg://postgres@127.0.0.1:5432/{database}",
        "MAILBRIDGE_REDIS_URL": "redis://127.0.0.1:6379/5",
        "MAILBRIDGE_SMTP_URL": f"smtp://127.0.0.1:{smtp.port}",
        "MAILBRIDGE_SEND_RATE_LIMIT": "1000000/minute",
        "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true",
        "MAILBRIDGE_DNS_NAMESERVER": dns.address,
        "MAILBRIDGE_DELIVERY_LEASE_SECONDS": "10",
        "MAILBRIDGE_CAMPAIGN_LEASE_SECONDS": "10",
        "MAILBRIDGE_INBOUND_SMTP": "off",
        # Every process writes its counters here; /metrics of any API process sums them.
        "PROMETHEUS_MULTIPROC_DIR": str(folder / "metrics"),
        "BENCH_API": f"http://127.0.0.1:{api_ports[0]}",
        "BENCH_HOOKS": f"http://127.0.0.1:{hooks.port}/hooks",
    })  # fmt: skip
    apis = [
        Process(f"api{n}", _mailbridge("api", "--host", "127.0.0.1", "--port", str(port)),
                env, folder / f"api{n}.log", port)
        for n, port in enumerate(api_ports)
    ]  # fmt: skip
    # As docs/deploy.md's units: runners and the listener at Nice=10, the API at 0.
    runners = [Process(f"runner{n}", _mailbridge("runner"), env, folder / f"runner{n}.log",
                       nice=10) for n in range(3)]  # fmt: skip
    inbound = Process("inbound", _mailbridge("inbound", "--listen", f"127.0.0.1:{inbound_port}"),
                      env, folder / "inbound.log", nice=10)  # fmt: skip
    everything = [*apis, *runners, inbound]
    load = Load()
    (folder / "metrics").mkdir()
    try:
        _run(_mailbridge("db", "upgrade"), env)
        for process in apis:
            process.start()
        await _wait_http(api_ports)
        seeded = await _seed(env, contacts)
        for process in [*runners, inbound]:
            process.start()
        print(f"cluster: database {database}, folder {folder}", flush=True)
        started = time.monotonic()
        until = started + seconds
        async with httpx.AsyncClient(
            base_url=env["BENCH_API"], timeout=60,
            headers={"authorization": f"Bearer {seeded['token']}"},
        ) as api:  # fmt: skip
            answer = await api.post(f"/campaigns/{seeded['campaign']}/send", json={})
            print(f"campaign send: {answer.status_code}", flush=True)
        await asyncio.gather(
            _send_load(api_ports, seeded["token"], load, until),
            _event_load(api_ports, seeded["token"], load, until),
            _inbound_load(inbound_port, load, until),
            _faults([*apis, *runners], load, until, restart_pg),
            _metrics_during(api_ports, started + seconds * 0.3),
        )
        print(f"load done after {time.monotonic() - started:.0f} s; draining", flush=True)
        deadline = time.monotonic() + 300
        state: dict[str, int] = {}
        while time.monotonic() < deadline:
            try:
                state = await _drained(dsn)
            except (OSError, asyncpg.PostgresError):
                state = {}
            if state and not any(state.values()):
                break
            await asyncio.sleep(2)
        print(f"drained after {time.monotonic() - started:.0f} s: {state}", flush=True)
        await asyncio.sleep(3)  # the last webhook answers and inbound commits
        await _print_metrics(api_ports, "after the run")
        return await _report(dsn, load, smtp, hooks, everything)
    finally:
        for process in everything:
            process.stop()
        smtp.stop()
        hooks.stop()
        dns.stop()
        await _admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


async def _metrics_during(ports: list[int], at: float) -> None:
    """``/metrics`` once in the middle of the load, while the queues hold work (after the
    drain their depth and oldest due age are 0, as they should be)."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    await _print_metrics(ports, "during the load")


async def _print_metrics(ports: list[int], when: str) -> None:
    """The families ``GET /metrics`` shows after the run, and how many of their samples
    are non-zero (loopback needs no token)."""
    async with httpx.AsyncClient(timeout=30) as client:
        for port in ports:
            try:
                answer = await client.get(f"http://127.0.0.1:{port}/metrics")
            except httpx.HTTPError:
                continue
            if answer.status_code == 200:
                break
        else:
            print("metrics: no API answered /metrics")
            return
    families: dict[str, list[int]] = {}
    for line in answer.text.splitlines():
        if line.startswith("# TYPE mailbridge_"):
            families.setdefault(line.split()[2], [0, 0])
        elif line.startswith("mailbridge_"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            for suffix in ("_bucket", "_count", "_sum", "_total", "_created"):
                if name.endswith(suffix) and name.removesuffix(suffix) in families:
                    name = name.removesuffix(suffix)
                    break
            counts = families.setdefault(name, [0, 0])
            counts[0] += 1
            counts[1] += float(line.rsplit(" ", 1)[1]) != 0
    print(f"metrics families {when} (samples, non-zero):")
    for name, (samples, nonzero) in sorted(families.items()):
        print(f"  {name:<60}{samples:>6}{nonzero:>6}")


async def _wait_http(ports: list[int]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    async with httpx.AsyncClient(timeout=2) as client:
        for port in ports:
            while True:
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"mailbridge api on {port} did not start")
                await asyncio.sleep(0.2)


async def _print_histories(
    dsn: str, message_ids: list[str], sink: collections.Counter[str], kills: list[str]
) -> None:
    """What the database says of each email lost or sent twice: its events, in order, with
    the runner that made each handover — where to look for the cause."""
    if not message_ids:
        return
    quoted = ", ".join("'" + m.replace("'", "''") + "'" for m in message_ids)
    rows = await _count(
        "SELECT e.message_id, e.status, e.attempts, x.type, x.data::text AS data, x.created_at "
        "FROM emails e JOIN email_events x ON x.email_id = e.id "
        f"WHERE e.message_id IN ({quoted}) ORDER BY e.message_id, x.created_at, x.id",
        dsn,
    )
    print(f"what the database says of them (SIGKILLs, UTC: {', '.join(kills)}):")
    for row in rows:
        print(f"  {row['message_id']} (at the sink {sink[row['message_id']]}x, "
              f"{row['status']}, attempts {row['attempts']}): {row['created_at']:%H:%M:%S.%f} "
              f"{row['type']} {row['data'][:300]}")  # fmt: skip


def _print_timeline(load: Load, window: float = 10.0) -> None:
    """POST /emails latency by window of the run, beside the faults of that window: where
    the slow requests are."""
    if not load.latencies:
        return
    first = min(begun for begun, _ in load.latencies)
    windows: dict[int, list[float]] = collections.defaultdict(list)
    for begun, seconds in load.latencies:
        windows[int((begun - first) // window)].append(seconds)
    print(f"POST /emails by {window:.0f} s window: requests, p50 ms, p99 ms, max ms, faults")
    for index in sorted(windows):
        values = windows[index]
        start, end = first + index * window, first + (index + 1) * window
        faults = [name for when, name in load.kills if start <= when < end]
        if load.outage is not None and start <= load.outage[1] and load.outage[0] < end:
            faults.append("postgresql")
        print(f"  {index * window:>5.0f}s {len(values):>6} "
              f"{statistics.median(values) * 1000:>8.1f} {_percentile(values, 0.99) * 1000:>8.1f} "
              f"{max(values) * 1000:>8.1f}  {' '.join(faults)}")  # fmt: skip


async def _report(
    dsn: str, load: Load, smtp: Recorder, hooks: Recorder, processes: list[Process]
) -> int:
    emails = await _count("SELECT id::text AS id, message_id, status FROM emails", dsn)
    by_id = {row["id"]: row for row in emails}
    sink = collections.Counter(smtp.lines())
    failed = [row for row in emails if row["status"] in ("failed", "bounced", "suppressed")]
    expected = {row["message_id"] for row in emails if row not in failed}
    lost_sends = sorted(expected - set(sink))
    duplicated = {message_id: n for message_id, n in sink.items() if n > 1}
    unknown = set(sink) - {row["message_id"] for row in emails}
    accepted_missing = load.accepted - set(by_id)
    runs = await _count("SELECT status, count(*) AS n FROM automation_runs GROUP BY status", dsn)
    run_counts = {row["status"]: int(row["n"]) for row in runs}
    deliveries = await _count(
        "SELECT event_id::text AS event_id, status FROM webhook_deliveries WHERE replay_of IS NULL",
        dsn,
    )
    received = collections.Counter(hooks.lines())
    events = {row["event_id"] for row in deliveries}
    hooks_lost = events - set(received)
    hooks_dup = sum(1 for n in received.values() if n > 1)
    stored = await _count("SELECT message_id FROM received_emails", dsn)
    stored_ids = collections.Counter(f"<{row['message_id'].strip('<>')}>" for row in stored)
    inbound_lost = set(load.inbound_acknowledged) - set(stored_ids)
    inbound_dup = sum(1 for n in stored_ids.values() if n > 1)
    outside = [
        seconds for begun, seconds in load.latencies
        if load.outage is None or not (load.outage[0] <= begun <= load.outage[1])
    ]  # fmt: skip
    print()
    print(f"{'what':<46}{'figure':>14}")
    rows = [
        ("emails stored (API, campaign, automation)", len(emails)),
        ("  accepted by the API (200) but not stored", len(accepted_missing)),
        ("  failed/bounced/suppressed", len(failed)),
        ("messages at the sink", sum(sink.values())),
        ("  lost sends (stored, not at the sink)", len(lost_sends)),
        ("  duplicated sends", len(duplicated)),
        ("  at the sink but unknown", len(unknown)),
        ("events accepted (runs expected)", load.events_accepted),
        ("runs completed", run_counts.get("completed", 0)),
        ("runs not completed", sum(n for s, n in run_counts.items() if s != "completed")),
        ("webhook events", len(events)),
        ("  lost webhooks", len(hooks_lost)),
        ("  events delivered more than once", hooks_dup),
        ("inbound acknowledged (250)", len(load.inbound_acknowledged)),
        ("  inbound lost", len(inbound_lost)),
        ("  inbound stored twice", inbound_dup),
        ("POST /emails p50 ms (outside the restart)", round(statistics.median(outside) * 1000, 1)
         if outside else 0),
        ("POST /emails p99 ms (outside the restart)", round(_percentile(outside, 0.99) * 1000, 1)),
        ("processes SIGKILLed", sum(p.kills for p in processes)),
    ]  # fmt: skip
    for what, figure in rows:
        print(f"{what:<46}{figure:>14}")
    print(f"API answers: {dict(load.answers)}")
    served = await _count(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50, "
        "percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99 FROM request_logs "
        "WHERE method = 'POST' AND path = '/emails'",
        dsn,
    )
    print(f"POST /emails as the APIs timed them (request log, whole run): "
          f"p50 {served[0]['p50']} ms, p99 {served[0]['p99']} ms")  # fmt: skip
    _print_timeline(load)
    print(f"PostgreSQL restart window: {load.outage}")
    await _print_histories(dsn, [*lost_sends, *duplicated][:10], sink, load.kill_clock)
    ok = not (lost_sends or duplicated or hooks_lost or accepted_missing or inbound_lost)
    print("RESULT:", "nothing lost or repeated" if ok else "LOSSES OR DUPLICATES (above)")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--contacts", type=int, default=20_000)
    parser.add_argument("--no-pg-restart", action="store_true")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.seconds, arguments.contacts, not arguments.no_pg_restart)))
