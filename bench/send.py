"""POST /emails throughput and latency, beside a bare FastAPI endpoint doing the same validation.

    .venv/bin/python -m bench.send [--requests 20000] [--connections 64] [--emails 10000]
                                   [--rounds 3]

Starts `mailbridge api` (SQLite, in a temporary data dir) and the bare baseline app as
real uvicorn processes on loopback, drives both with the same load, and prints
requests/s, p50 and p99 for each and the ratio. The bare app, what ships and the
FastAPI route it stands in front of (the library path of ``api/send_path.py``) run in
turn ``--rounds`` times, and the ratios are the medians of the rounds'; the aiosqlite
variants run once. Targets on a 2-core machine: >= 50 % of the bare endpoint with
p99 <= 50 ms. Then the delivery half, bench/delivery.py, runs
in the same invocation and prints its figures below (``--emails 0`` skips it): delivered
messages/s to a local SMTP sink, DKIM on, for the whole delivery pipeline with the
hand-written composing and DKIM modules and with the libraries they replace (the
hand-written/library ratios), beside its baseline — the same messages, composed and
signed before the clock, sent with aiosmtplib over one persistent connection per
concurrent worker — and mailbridge as a percentage of it. Targets: >= 1,000
delivered/s, mailbridge >= 40 % of the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench import delivery
from bench.load import LoadResult, request_bytes, run_load
from mailbridge.cli.main import event_loop_runner

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited early ({process.returncode})")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("server did not start")


def mailbridge(*args: str, env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-m", "mailbridge", *args], env=env, check=True,
        capture_output=True, text=True,
    ).stdout  # fmt: skip


# The hand-written hot paths beside the library paths they replace (docs/decisions.md):
# FastAPI's routing beside api/send_path.py, aiosqlite beside storage/sqlite_writer.py.
HAND_WRITTEN = "send shortcut + inline SQLite writes"
VARIANTS = {
    HAND_WRITTEN: {},
    "FastAPI route + inline SQLite writes": {"MAILBRIDGE_BENCH_SEND_SHORTCUT": "false"},
    "send shortcut + aiosqlite": {"MAILBRIDGE_BENCH_INLINE_SQLITE_WRITES": "false"},
    "FastAPI route + aiosqlite": {
        "MAILBRIDGE_BENCH_SEND_SHORTCUT": "false",
        "MAILBRIDGE_BENCH_INLINE_SQLITE_WRITES": "false",
    },
}
SHIPPED = HAND_WRITTEN
BARE = "bare"


def prepare(env: dict[str, str]) -> str:
    """A team on the pro plan with a verified domain; the key's token."""
    mailbridge("admin", "teams", "create", "--name", "bench", "--plan", "pro", env=env)
    mailbridge("admin", "domains", "add", "shop.io", "--verified", env=env)
    return str(
        json.loads(mailbridge("admin", "keys", "create", "--name", "bench", env=env))["token"]
    )


def body(number: int) -> bytes:
    return json.dumps({
        "from": "Shop <news@shop.io>", "to": [f"user{number}@corp.io"],
        "subject": f"Order {number}", "html": "<p>Thanks for your order!</p>",
        "tags": [{"name": "kind", "value": "receipt"}],
    }).encode()  # fmt: skip


def drive(port: int, headers: dict[str, str], total: int, connections: int) -> LoadResult:
    def make(number: int) -> bytes:
        return request_bytes(f"127.0.0.1:{port}", "/emails", body(number), headers)

    asyncio.run(run_load("127.0.0.1", port, make, total=min(500, total), connections=connections))
    return asyncio.run(run_load("127.0.0.1", port, make, total=total, connections=connections))


def serve(command: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    wait_until_up(f"http://127.0.0.1:{port}/health" if "mailbridge" in command else
                  f"http://127.0.0.1:{port}/docs", process)  # fmt: skip
    return process


def environment(folder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env.update({
        "MAILBRIDGE_DATA_DIR": folder, "MAILBRIDGE_SEND_RATE_LIMIT": "100000000/minute",
        "MAILBRIDGE_LOG_LEVEL": "warning", "PYTHONPATH": str(ROOT),
    })  # fmt: skip
    return env


def measure_variant(switches: dict[str, str], total: int, connections: int) -> LoadResult:
    """``mailbridge api`` with ``switches`` on a database of its own (fresh quotas)."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**environment(folder), **switches}
        headers = {"Authorization": f"Bearer {prepare(env)}", "User-Agent": "bench/1.0"}
        api_port = free_port()
        api = serve([sys.executable, "-m", "mailbridge", "api", "--port", str(api_port)], env,
                    api_port)  # fmt: skip
        try:
            return drive(api_port, headers, total, connections)
        finally:
            api.terminate()
            api.wait()


def measure_bare(total: int, connections: int) -> LoadResult:
    with tempfile.TemporaryDirectory() as folder:
        headers = {"Authorization": "Bearer mb_bare", "User-Agent": "bench/1.0"}
        bare_port = free_port()
        bare = serve([sys.executable, "-m", "uvicorn", "bench.bare_app:app", "--port",
                      str(bare_port), "--log-level", "warning"], environment(folder),
                     bare_port)  # fmt: skip
        try:
            return drive(bare_port, headers, total, connections)
        finally:
            bare.terminate()
            bare.wait()


# Measured in every round, one right after the other (the machine's speed drifts by
# ±10 % and more over a minute here: a single run of each inherits all of it); the other
# variants once.
EACH_ROUND = (SHIPPED, "FastAPI route + inline SQLite writes")


def main(total: int, connections: int, emails: int, rounds: int) -> None:
    measured: list[dict[str, LoadResult]] = []
    for _ in range(rounds):
        results = {BARE: measure_bare(total, connections)}
        for name in EACH_ROUND:
            results[name] = measure_variant(VARIANTS[name], total, connections)
        measured.append(results)
    once = {
        name: measure_variant(switches, total, connections)
        for name, switches in VARIANTS.items()
        if name not in EACH_ROUND
    }
    print(f"{total:,} requests over {connections} keep-alive connections, 2 processes "
          f"(server + load generator) on {os.cpu_count()} cores, {rounds} rounds")  # fmt: skip
    for number, results in enumerate(measured, 1):
        print(f"round {number}:")
        print("  " + results[BARE].line("bare FastAPI + validation"))
        for name in EACH_ROUND:
            print("  " + results[name].line(f"mailbridge POST /emails, {name}"))
    for name, result in once.items():
        print(result.line(f"mailbridge POST /emails, {name}"))
    shipped = [results[SHIPPED] for results in measured]
    p99 = statistics.median(result.percentile(0.99) for result in shipped) * 1000
    print(f"ratio (mailbridge / bare): {_median_ratio(measured, BARE)} throughput, p99 "
          f"{p99:.1f} ms; targets >= 0.50x, p99 <= 50 ms   (medians of the rounds)")  # fmt: skip
    for name in EACH_ROUND[1:]:
        print(f"hand-written / library, {name}: {_median_ratio(measured, name)}"
              f"   (median of the rounds; rule: >= 1.5x)")  # fmt: skip
    fastest = statistics.median(result.per_second for result in shipped)
    for name, result in once.items():
        print(f"hand-written / library, {name}: {fastest / result.per_second:.2f}x")
    if emails:
        print()
        with event_loop_runner() as runner:
            print(delivery.report(runner.run(delivery.measure(emails))))


def _median_ratio(measured: list[dict[str, LoadResult]], against: str) -> str:
    """What ships / ``against``: the median of the rounds' ratios, and each of them."""
    values = [results[SHIPPED].per_second / results[against].per_second for results in measured]
    return f"{statistics.median(values):.2f}x ({', '.join(f'{v:.2f}' for v in values)})"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--emails", type=int, default=10_000, help="delivered in the delivery half")
    parser.add_argument("--rounds", type=int, default=3, help="bare, shipped and route, in turn")
    arguments = parser.parse_args()
    main(arguments.requests, arguments.connections, arguments.emails, arguments.rounds)
