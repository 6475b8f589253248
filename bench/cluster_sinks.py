"""What ``bench.cluster`` sends to, each in a process of its own, each writing down what
it got so that losses and duplicates can be counted afterwards:

- an SMTP sink (aiosmtpd) appending each accepted message's ``Message-ID`` to a file;
- a webhook receiver (a minimal HTTP/1.1 server) appending each delivery's
  ``X-Service-Event-Id`` to a file and answering 200.

Lines are flushed as they are written: a figure read after the run counts every
message or delivery that was answered.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from bench.webhook_sink import MinimalReceiver

EVENT_ID = b"x-service-event-id"


class RecordingHandler:
    def __init__(self, out: Path) -> None:
        self.out = out.open("a", buffering=1)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        headers = BytesHeaderParser().parsebytes(envelope.original_content or b"")
        self.out.write(f"{(headers['Message-ID'] or '').strip()}\n")
        return "250 OK"


def _smtp(port: int, out: Path, ready: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    controller = Controller(RecordingHandler(out), hostname="127.0.0.1", port=port)
    controller.start()
    ready.set()
    signal.sigwait({signal.SIGTERM})
    controller.stop()


class RecordingReceiver(MinimalReceiver):
    """``bench.webhook_sink``'s receiver, writing down each delivery's event id."""

    def __init__(self, out: Any) -> None:
        super().__init__(multiprocessing.Value("i", 0))
        self.out = out

    def answered(self, head: bytes) -> None:
        event_id = b""
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == EVENT_ID:
                event_id = value.strip()
        self.out.write(event_id.decode("ascii", "replace") + "\n")


def _webhooks(port: int, out: Path, ready: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    handle = out.open("a", buffering=1)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: RecordingReceiver(handle), "127.0.0.1", port)
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        ready.set()
        await stop.wait()
        server.close()

    asyncio.run(main())


class Recorder:
    """One recording server in its own process; ``lines()`` reads what it wrote down."""

    def __init__(self, kind: str, port: int, out: Path) -> None:
        self.kind, self.port, self.out = kind, port, out
        self._ready = multiprocessing.Event()
        target = _smtp if kind == "smtp" else _webhooks
        self._process = multiprocessing.Process(
            target=target, args=(port, out, self._ready), daemon=True
        )

    def start(self) -> None:
        self._process.start()
        if not self._ready.wait(20):
            raise RuntimeError(f"the {self.kind} recorder did not start")

    def lines(self) -> list[str]:
        if not self.out.exists():
            return []
        return [line for line in self.out.read_text().splitlines() if line]

    def stop(self) -> None:
        if self._process.pid is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join(10)
