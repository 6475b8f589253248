"""Bodies and memory on a real `mailbridge serve` (issue 2 of 7, Must have 3): a body over
the limit is refused from its Content-Length, before the server reads it; the same body
sent again never raises the process's memory by more than the limit's size."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.acceptance.conftest import admin, start

LIMIT = 8 * 1024 * 1024


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    environment: dict[str, str], tmp_path: Path
) -> None:
    env = {**environment, "MAILBRIDGE_MAX_BODY_BYTES": str(LIMIT)}
    admin("teams", "create", "--name", "acme", "--plan", "pro", env=env)
    token = json.loads(admin("keys", "create", "--name", "big", env=env).stdout)["token"]
    server = start("serve", env, tmp_path / "serve.log")
    try:
        url = urlsplit(server.base_url)
        assert url.hostname is not None and url.port is not None
        with socket.create_connection((url.hostname, url.port)) as raw:
            # 50 MB announced, none of it sent: the answer cannot wait for the body.
            raw.sendall(
                b"POST /emails HTTP/1.1\r\nHost: x\r\nUser-Agent: acceptance/1.0\r\n"
                + f"Authorization: Bearer {token}\r\n".encode()
                + b"Content-Type: application/json\r\n"
                + f"Content-Length: {50 * 1024 * 1024}\r\n\r\n".encode()
            )
            raw.settimeout(60)
            answer = b""
            while not answer.endswith(b"}"):
                received = raw.recv(4096)
                if not received:
                    break
                answer += received
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b'"name":"payload_too_large"' in answer
    finally:
        assert server.stop() == 0


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_the_same_body_sent_again_never_raises_memory_by_more_than_the_limit(
    environment: dict[str, str], tmp_path: Path
) -> None:
    env = {**environment, "MAILBRIDGE_MAX_BODY_BYTES": str(LIMIT)}
    admin("teams", "create", "--name", "acme", "--plan", "pro", env=env)
    admin("domains", "add", "shop.io", "--verified", env=env)
    token = json.loads(admin("keys", "create", "--name", "big", env=env).stdout)["token"]
    html = ("<p>" + "x" * 60 + "</p>\n") * (7 * 1024 * 1024 // 68)  # 7 MiB: under the limit
    accepted = json.dumps(
        {"from": "shop@shop.io", "to": ["ann@customer.net"], "subject": "Big", "html": html}
    ).encode()
    refused = accepted + b" " * LIMIT  # over the limit, read while streaming
    server = start("serve", env, tmp_path / "serve.log")
    pid = server.process.pid
    try:
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as client:

            def send(body: bytes) -> int:
                answer = client.post(
                    "/emails", content=body, headers={"Content-Type": "application/json"}
                )
                if answer.status_code == 200:  # and delivered: composing is part of it
                    email_id = answer.json()["id"]
                    deadline = time.monotonic() + 60
                    while client.get(f"/emails/{email_id}").json()["last_event"] == "queued":
                        assert time.monotonic() < deadline
                        time.sleep(0.1)
                time.sleep(0.5)
                return answer.status_code

            assert send(accepted) == 200
            first = resident_bytes(pid)
            for _ in range(4):
                assert send(accepted) == 200
                assert resident_bytes(pid) - first <= LIMIT
            for _ in range(2):
                assert send(refused) == 413
                assert resident_bytes(pid) - first <= LIMIT
    finally:
        assert server.stop() == 0
