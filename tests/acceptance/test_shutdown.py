"""SIGTERM under load: `mailbridge serve` stops accepting, finishes or releases what is in
flight and exits 0 within its shutdown deadline (MAILBRIDGE_SHUTDOWN_TIMEOUT, 10 s),
with no traceback — even with webhook endpoints that never answer."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.acceptance.conftest import admin, start

UA = {"User-Agent": "acceptance/1.0"}
DEADLINE = 10.0
# The interpreter's own exit after the deadline (imports torn down, files closed).
EXIT_SLACK = 2.0


@pytest.fixture
def silent_endpoint() -> Iterator[int]:
    """A TCP port on loopback that accepts connections and never answers a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    held: list[socket.socket] = []
    stopping = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stopping.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_serve_exits_within_its_deadline_under_load(
    environment: dict[str, str], tmp_path: Path, silent_endpoint: int
) -> None:
    env = {
        **environment,
        "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true",
        "MAILBRIDGE_WEBHOOK_TIMEOUT": "120",  # the endpoint would hold them for minutes
        "MAILBRIDGE_SEND_RATE_LIMIT": "1000000/minute",
    }
    admin("teams", "create", "--name", "acme", "--plan", "pro", env=env)
    admin("domains", "add", "shop.io", "--verified", env=env)
    token = json.loads(admin("keys", "create", "--name", "load", env=env).stdout)["token"]
    headers = {**UA, "Authorization": f"Bearer {token}"}
    server = start("serve", env, tmp_path / "serve.log")
    try:
        hook = httpx.post(
            f"{server.base_url}/webhooks", headers=headers,
            json={"endpoint": f"http://127.0.0.1:{silent_endpoint}/hook",
                  "events": ["email.sent", "email.delivered"]},
        )  # fmt: skip
        assert hook.status_code == 201, hook.text
        stop_sending = threading.Event()

        def send(number: int) -> None:
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
                while not stop_sending.is_set():
                    try:
                        client.post("/emails", json={
                            "from": "Shop <news@shop.io>", "to": [f"c{number}@corp.io"],
                            "subject": "Hello", "html": "<p>Hi</p>",
                        })  # fmt: skip
                    except httpx.TransportError:
                        return  # the server went away: what this test wants

        with ThreadPoolExecutor(8) as senders:
            for number in range(8):
                senders.submit(send, number)
            time.sleep(3)  # deliveries done, webhook POSTs hanging on the silent endpoint
            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            code = server.process.wait(timeout=DEADLINE + 20)
            took = time.monotonic() - signalled
            stop_sending.set()
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
    log = server.log.read_text()
    assert code == 0, log[-3000:]
    assert took <= DEADLINE + EXIT_SLACK, f"stopped {took:.1f} s after SIGTERM\n{log[-3000:]}"
    assert "Traceback" not in log, log[-5000:]
    assert "non-checked-in connection" not in log, log[-5000:]
