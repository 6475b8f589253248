"""A body over the limit is refused from its Content-Length, before the server reads it
(issue 2 of 7, Must have 3), on a real `mailbridge serve`."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

from tests.acceptance.conftest import mailbridge, start

LIMIT = 8 * 1024 * 1024


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    environment: dict[str, str], tmp_path: Path
) -> None:
    env = {**environment, "MAILBRIDGE_MAX_BODY_BYTES": str(LIMIT)}
    mailbridge("teams", "create", "--name", "acme", "--plan", "pro", env=env)
    token = json.loads(mailbridge("keys", "create", "--name", "big", env=env).stdout)["token"]
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
            raw.settimeout(10)
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
