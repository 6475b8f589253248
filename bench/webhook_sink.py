"""A minimal webhook receiver for benchmarks, in a process of its own (so it gets its own
core), counting the requests it answers.

A small asyncio protocol speaking just what a webhook sender needs from HTTP/1.1:
request heads, ``Content-Length`` bodies, keep-alive; it answers ``200 ok`` to every
request and reads nothing of the body — what a fast receiver looks like from the sender.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import socket
import time
from multiprocessing.sharedctypes import Synchronized
from typing import Any

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


class MinimalReceiver(asyncio.Protocol):
    def __init__(self, counter: Synchronized[int]) -> None:
        self.counter = counter
        self.transport: asyncio.Transport | None = None
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end == -1:
                return
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            self.answered(head)
            assert self.transport is not None
            self.transport.write(ANSWER)

    def answered(self, head: bytes) -> None:
        """One request read whole (``head``: its request line and headers)."""
        self.counter.value += 1  # one process, one thread: no lock needed


def _serve(port: int, counter: Synchronized[int], ready: Any) -> None:
    signal.signal(signal.SIGTERM, lambda *_: None)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: MinimalReceiver(counter), "127.0.0.1", port, backlog=1024
        )
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        ready.set()
        await stop.wait()
        server.close()

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ReceiverProcess:
    def __init__(self) -> None:
        self.port = free_port()
        context = multiprocessing.get_context("spawn")
        self._counter: Synchronized[int] = context.Value("q", 0)
        self._ready = context.Event()
        self._process = context.Process(
            target=_serve, args=(self.port, self._counter, self._ready), daemon=True
        )

    def url(self, path: str = "/hooks/mailbridge") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        self._process.start()
        if not self._ready.wait(30):
            raise RuntimeError("the webhook receiver did not start")

    def received(self) -> int:
        return int(self._counter.value)

    async def wait_for(self, count: int, timeout: float = 600.0) -> None:
        deadline = time.monotonic() + timeout
        while self.received() < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the receiver got {self.received()} of {count} requests")
            await asyncio.sleep(0.002)

    def stop(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(10)
