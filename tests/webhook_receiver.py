"""A real HTTP receiver on loopback for webhook tests: records every POST as received and
answers from a script of statuses, and checks signatures with its own HMAC-SHA256 —
written from spec §6.2 with ``hmac`` and ``hashlib``, independent of mailbridge's code."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    status: int = 200  # what the receiver answered

    @property
    def event_id(self) -> str:
        return self.headers["x-service-event-id"]

    @property
    def timestamp(self) -> str:
        return self.headers["x-service-timestamp"]

    @property
    def payload(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed

    def signed_with(self, secret: str) -> bool:
        """Spec §6.2: hex HMAC-SHA256 of ``<timestamp>.<raw body>`` keyed with the secret."""
        expected = hmac.new(
            secret.encode(), self.timestamp.encode() + b"." + self.body, hashlib.sha256
        ).hexdigest()
        return hmac.compare_digest(expected, self.headers["x-service-signature"])


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.script: list[int] = []  # statuses to answer first, in order; then `status`
        self.by_type: dict[str, list[int]] = {}  # event type → statuses to answer it first
        self.status = 200
        self.delay = 0.0  # seconds before answering
        self.arrived = 0  # requests read, answered or not yet (``received`` holds answered)
        # Makes the body of a 2xx answer from the request's payload (a fake agent); None: "ok".
        self.responder: Callable[[dict[str, Any]], bytes] | None = None
        self.lock = threading.Lock()
        self.port = 0

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def answer(self, *statuses: int) -> None:
        with self.lock:
            self.script.extend(statuses)

    def answer_type(self, event_type: str, *statuses: int) -> None:
        """Answer the next requests carrying ``event_type`` with ``statuses``."""
        with self.lock:
            self.by_type.setdefault(event_type, []).extend(statuses)

    def requests(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def event_ids(self) -> list[str]:
        return [request.event_id for request in self.requests()]

    def wait_for(self, count: int, timeout: float = 60.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.requests()) < count:
            assert time.monotonic() < deadline, f"only {len(self.requests())} of {count} arrived"
            time.sleep(0.01)
        return self.requests()

    def _next_status(self, body: bytes) -> int:
        with self.lock:
            if self.by_type:
                event_type = json.loads(body).get("type")
                scripted = self.by_type.get(event_type)
                if scripted:
                    return scripted.pop(0)
            return self.script.pop(0) if self.script else self.status


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real receivers do

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with receiver.lock:
                receiver.arrived += 1
            headers = {name.lower(): value for name, value in self.headers.items()}
            if receiver.delay:
                time.sleep(receiver.delay)
            status = receiver._next_status(body)
            with receiver.lock:
                receiver.received.append(Received(self.path, headers, body, status))
            answer = b"ok" if 200 <= status < 300 else b"not now"
            if receiver.responder is not None and 200 <= status < 300:
                answer = receiver.responder(json.loads(body))
            try:
                self.send_response(status)
                plain = receiver.responder is None or not 200 <= status < 300
                self.send_header("Content-Type", "text/plain" if plain else "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the sender gave up waiting

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    # The listen backlog of a real server, not socketserver's 5: a runner opening a
    # hundred connections at once is not refused.
    request_queue_size = 256


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    server = _Server(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
