"""POST /emails throughput and latency, beside a bare FastAPI endpoint doing the same validation.

    .venv/bin/python -m bench.send [--requests 20000] [--connections 64] [--emails 10000]

Starts `mailbridge api` (SQLite, in a temporary data dir) and the bare baseline app as
real uvicorn processes on loopback, drives both with the same load, and prints
requests/s, p50 and p99 for each and the ratio. Targets on a 2-core machine:
>= 1,500 requests/s with p99 <= 50 ms. Then the delivery half, bench/delivery.py, runs
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


def main(total: int, connections: int, emails: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        headers = {"Authorization": "Bearer mb_bare", "User-Agent": "bench/1.0"}
        bare_port = free_port()
        bare = serve([sys.executable, "-m", "uvicorn", "bench.bare_app:app", "--port",
                      str(bare_port), "--log-level", "warning"], environment(folder),
                     bare_port)  # fmt: skip
        try:
            baseline = drive(bare_port, headers, total, connections)
        finally:
            bare.terminate()
            bare.wait()
    measured = {
        name: measure_variant(switches, total, connections) for name, switches in VARIANTS.items()
    }
    print(f"{total:,} requests over {connections} keep-alive connections, 2 processes "
          f"(server + load generator) on {os.cpu_count()} cores")  # fmt: skip
    print(baseline.line("bare FastAPI + validation"))
    for name, result in measured.items():
        print(result.line(f"mailbridge POST /emails, {name}"))
    ours = measured[SHIPPED]
    print(f"ratio (mailbridge / bare): {ours.per_second / baseline.per_second:.2f}x "
          f"throughput; targets >= 0.50x, p99 <= 50 ms")  # fmt: skip
    for name, result in measured.items():
        if name != SHIPPED:
            print(f"hand-written / library, {name}: "
                  f"{measured[HAND_WRITTEN].per_second / result.per_second:.2f}x")  # fmt: skip
    if emails:
        print()
        with event_loop_runner() as runner:
            print(delivery.report(runner.run(delivery.measure(emails))))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--emails", type=int, default=10_000, help="delivered in the delivery half")
    arguments = parser.parse_args()
    main(arguments.requests, arguments.connections, arguments.emails)
