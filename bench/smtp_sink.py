"""SMTP sinks for benchmarks, in a process of their own (so they get their own core),
counting the messages they accept.

Two listeners, both real SMTP servers on loopback:

- ``aiosmtpd``: the library the tests use; it spends ~0.6 ms of CPU per message
  itself, so on a 2-core machine it takes most of the core the sender does not.
- ``minimal``: a small asyncio protocol that speaks just what a sender needs
  (EHLO/HELO, MAIL, RCPT, DATA with dot-stuffing and the ``.`` terminator, RSET,
  NOOP, QUIT) and discards the content: what a fast relay looks like from the sender.
  Like Postfix, Exim, Gmail and Microsoft 365, it offers PIPELINING (RFC 2920) and
  takes a group of commands in one read; given a ``reply_delay`` it answers each
  command that many seconds late, as a relay a round trip away would.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import signal
import socket
import time
from multiprocessing.sharedctypes import Synchronized
from typing import Any

from aiosmtpd.controller import Controller


class CountingHandler:
    def __init__(self, counter: Synchronized[int]) -> None:
        self.counter = counter

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.counter.get_lock():
            self.counter.value += 1
        return "250 OK"


class MinimalSmtp(asyncio.Protocol):
    def __init__(self, counter: Synchronized[int], reply_delay: float = 0.0) -> None:
        self.counter = counter
        self.reply_delay = reply_delay  # seconds: a relay that far away (a round trip)
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.in_data = False
        self.recipients = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.reply(b"220 sink.local ESMTP ready")

    def reply(self, line: bytes) -> None:
        assert self.transport is not None
        if self.reply_delay:
            # Each reply reaches the sender a round trip after its command left it
            # (replies to a pipelined group arrive together, as over a real network).
            loop = asyncio.get_running_loop()
            loop.call_later(self.reply_delay, self._write, line + b"\r\n")
        else:
            self.transport.write(line + b"\r\n")

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if self.in_data:
                end = self.buffer.find(b"\r\n.\r\n")
                if end == -1:
                    # Keep the tail only: a terminator may straddle two reads.
                    self.buffer = self.buffer[-4:]
                    return
                self.buffer = self.buffer[end + 5 :]
                self.in_data = False
                self.recipients = 0
                self.counter.value += 1  # one process, one thread: no lock needed
                self.reply(b"250 2.0.0 OK")
                continue
            line_end = self.buffer.find(b"\r\n")
            if line_end == -1:
                return
            line, self.buffer = self.buffer[:line_end], self.buffer[line_end + 2 :]
            self.command(line)

    def command(self, line: bytes) -> None:
        verb = line[:4].upper()
        if verb == b"EHLO":
            self.reply(b"250-sink.local\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 52428800")
        elif verb == b"HELO":
            self.reply(b"250 sink.local")
        elif verb in (b"MAIL", b"RSET", b"NOOP"):
            self.recipients = 0 if verb != b"NOOP" else self.recipients
            self.reply(b"250 OK")
        elif verb == b"RCPT":
            self.recipients += 1
            self.reply(b"250 OK")
        elif verb == b"DATA":
            if not self.recipients:
                self.reply(b"503 need RCPT")
                return
            self.in_data = True
            # The content starts right after this line: look for "\r\n.\r\n" from here.
            self.buffer = b"\r\n" + self.buffer
            self.reply(b"354 go ahead")
        elif verb == b"QUIT":
            self.reply(b"221 bye")
            assert self.transport is not None
            # After the (perhaps late) reply: a transport closes once its buffer is sent.
            asyncio.get_running_loop().call_later(self.reply_delay, self.transport.close)
        else:
            self.reply(b"502 not implemented")


def _serve(
    kind: str, port: int, counter: Synchronized[int], ready: Any, reply_delay: float
) -> None:
    signal.signal(signal.SIGTERM, lambda *_: None)
    if kind == "aiosmtpd":
        controller = Controller(
            CountingHandler(counter), hostname="127.0.0.1", port=port, data_size_limit=0
        )
        controller.start()
        ready.set()
        with contextlib.suppress(KeyboardInterrupt):
            signal.sigwait({signal.SIGTERM, signal.SIGINT})
        controller.stop()
        return

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: MinimalSmtp(counter, reply_delay), "127.0.0.1", port
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


class SinkProcess:
    def __init__(self, kind: str = "minimal", *, reply_delay: float = 0.0) -> None:
        if kind not in ("minimal", "aiosmtpd"):
            raise ValueError(f"unknown sink {kind!r}")
        if reply_delay and kind != "minimal":
            raise ValueError("only the minimal sink answers late")
        self.kind = kind
        self.port = free_port()
        context = multiprocessing.get_context("spawn")
        self._counter: Synchronized[int] = context.Value("q", 0)
        self._ready = context.Event()
        self._process = context.Process(
            target=_serve,
            args=(kind, self.port, self._counter, self._ready, reply_delay),
            daemon=True,
        )

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._process.start()
        if not self._ready.wait(30):
            raise RuntimeError("the SMTP sink did not start")

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def received(self) -> int:
        return int(self._counter.value)

    async def wait_for(self, count: int, timeout: float = 600.0) -> None:
        deadline = time.monotonic() + timeout
        while self.received() < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the sink got {self.received()} of {count} messages")
            await asyncio.sleep(0.01)

    def stop(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(10)
