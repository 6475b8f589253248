"""Reading a received message off the event loop, in worker processes, within a time limit.

:func:`read_bounded` reads small, simple mail on the loop (``_mime.cheap_to_parse``
bounds its cost; a process hop would cost more than the parse) and anything else in
one of a few worker processes, ``PARSE_TIMEOUT`` seconds at most. Processes rather than
threads: a thread cannot be stopped at its time limit (it would go on burning a core,
and taking the interpreter lock from the loop in bursts of milliseconds, longer in C
calls); a process is killed, and another started. A worker answers with the fields,
the attachments and the report, and of the tree only its top-level header block (all
that is read of it afterwards): little to unpickle. A message whose worker timed out or
died is still stored, raw kept, with its top-level header fields and a ``parse_error``
saying why.

A worker is a fresh interpreter (``python -c``) that loads only what parsing needs —
this module, ``_mime``, ``_parsing`` and ``mail.inbound_reports`` — not the package's
face, which would bring the whole service along (far more memory and a far slower start).
It reads requests on its stdin and answers on its stdout, each a length-prefixed frame,
and exits when its stdin closes (its parent is gone).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from email.message import Message
from pathlib import Path
from typing import IO

from mailbridge.mail.inbound_reports import Bounce, Complaint
from mailbridge.services.inbound._mime import cheap_to_parse
from mailbridge.services.inbound._parsing import ParsedMessage, headers_only, read

logger = logging.getLogger(__name__)

PARSE_TIMEOUT = 20.0  # seconds of a worker's time for one message (ample for 40 MB)
START_TIMEOUT = 60.0  # seconds for a new worker to be ready
WORKERS = max(1, min(4, os.cpu_count() or 1))
TIMED_OUT = "parse timed out"

Read = tuple[ParsedMessage, Bounce | Complaint | None]
_FRAME = struct.Struct("!Q")
_HERE = Path(__file__).resolve().parent
# Loaded in this order under their own names; the package's __init__ never runs.
_MODULES = [
    ("mailbridge.services.inbound._mime", _HERE / "_mime.py"),
    ("mailbridge.services.inbound._parsing", _HERE / "_parsing.py"),
    ("mailbridge.services.inbound._parse_worker", _HERE / "_parse_worker.py"),
]
_BOOTSTRAP = """\
import importlib.util, sys
sys.path.insert(0, sys.argv[1])
for name, path in zip(sys.argv[2::2], sys.argv[3::2]):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
module.run_worker()
"""


class WorkerFailed(Exception):
    """A worker gave no answer: ``str()`` says why (timed out, or exited)."""


def _write(stream: IO[bytes], *chunks: bytes) -> None:
    stream.write(_FRAME.pack(sum(len(chunk) for chunk in chunks)))
    for chunk in chunks:
        stream.write(chunk)
    stream.flush()


def _read_exactly(descriptor: int, size: int, deadline: float | None) -> bytearray:
    data = bytearray()
    waiting = select.poll()
    waiting.register(descriptor, select.POLLIN)
    while len(data) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not waiting.poll(remaining * 1000):
                raise WorkerFailed(TIMED_OUT)
        chunk = os.read(descriptor, min(size - len(data), 1 << 20))
        if not chunk:
            raise WorkerFailed("the parse worker exited")
        data += chunk
    return data


def _read_frame(descriptor: int, deadline: float | None) -> bytearray:
    (size,) = _FRAME.unpack(_read_exactly(descriptor, _FRAME.size, deadline))
    return _read_exactly(descriptor, size, deadline)


def _top_level(message: Message | None) -> Message | None:
    """The message's top-level header block alone: what the parent reads of the tree."""
    if message is None:
        return None
    top = Message()
    for name, value in message.raw_items():
        top.set_raw(name, value)
    unixfrom = message.get_unixfrom()
    if unixfrom is not None:
        top.set_unixfrom(unixfrom)
    return top


def run_worker() -> None:
    """A worker's loop: a request is the raw message's length, the raw message and the
    pickled envelope recipients; the answer, the pickled ``read``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is for the parent
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into an answer
    _write(answers, b"ready")
    while True:
        try:
            frame = _read_frame(sys.stdin.fileno(), None)
        except WorkerFailed:  # stdin closed: the parent is gone or done
            return
        (size,) = _FRAME.unpack_from(frame)
        raw = bytes(frame[_FRAME.size : _FRAME.size + size])
        envelope_to = pickle.loads(frame[_FRAME.size + size :])
        del frame
        parsed, report = read(raw, envelope_to)
        parsed.message = _top_level(parsed.message)
        try:
            answer = pickle.dumps((parsed, report), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # what the parse made will not travel: the headers will
            answer = pickle.dumps((headers_only(raw, f"parse failed: {exc}"[:1000]), None))
        _write(answers, answer)


class _Worker:
    def __init__(self) -> None:
        root = str(_HERE.parents[2])  # the folder holding the mailbridge package
        paths = [str(part) for module in _MODULES for part in module]
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, root, *paths],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests, self.answers = self.process.stdin, self.process.stdout.fileno()
        if _read_frame(self.answers, time.monotonic() + START_TIMEOUT) != b"ready":
            raise WorkerFailed("the parse worker did not start")

    def send(self, raw: bytes, envelope_to: list[str]) -> None:
        try:
            _write(self.requests, _FRAME.pack(len(raw)), raw, pickle.dumps(envelope_to))
        except OSError as exc:  # it died while idle (the OOM killer, say)
            raise WorkerFailed("the parse worker exited") from exc

    def answer(self, timeout: float) -> Read:
        parsed, report = pickle.loads(_read_frame(self.answers, time.monotonic() + timeout))
        return parsed, report

    def stop(self, *, kill: bool = False) -> None:
        with contextlib.suppress(OSError):
            self.requests.close()
        if kill:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


class _Pool:
    """``WORKERS`` workers, each started when first needed (or by :func:`start_workers`);
    at most that many reads at once (the threads waiting on them), the rest queued."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a fork (``inbound --processes``) starts its own
        self.threads = ThreadPoolExecutor(WORKERS, thread_name_prefix="inbound-parse")
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def read(self, raw: bytes, envelope_to: list[str], timeout: float) -> Read:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        try:
            if worker is not None:
                try:
                    worker.send(raw, envelope_to)
                except WorkerFailed:  # an idle worker that died: a new one, once
                    worker.stop(kill=True)
                    worker = None
            if worker is None:
                worker = _Worker()
                worker.send(raw, envelope_to)
            answer = worker.answer(timeout)
        except BaseException:
            if worker is not None:
                worker.stop(kill=True)  # mid-request: it cannot be trusted with another
            raise
        self._rest(worker)
        return answer

    def start_one(self) -> None:
        """One more idle worker, unless there are enough."""
        with self._lock:
            if len(self._idle) >= WORKERS:
                return
        self._rest(_Worker())

    def _rest(self, worker: _Worker) -> None:
        with self._lock:
            kept = len(self._idle) < WORKERS
            if kept:
                self._idle.append(worker)
        if not kept:
            worker.stop()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()
        self.threads.shutdown(wait=False)


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            _pool = _Pool()
            atexit.register(_pool.close)
        return _pool


def start_workers() -> None:
    """Start the workers in the background (a listener does as it starts), so that the
    first messages they read do not wait for them, nor share the cores with their start."""
    pool = _the_pool()
    for _ in range(WORKERS):
        pool.threads.submit(pool.start_one).add_done_callback(_log_failure)


def _log_failure(future: Future[None]) -> None:
    if future.exception() is not None:
        logger.error("a parse worker did not start: %s", future.exception())


async def read_bounded(raw: bytes, envelope_to: Sequence[str]) -> Read:
    """The message's fields and report (``_parsing.read``), read within bounds: never
    blocks the loop for long, never raises for what the message holds."""
    if cheap_to_parse(raw):
        return read(raw, envelope_to)
    pool = _the_pool()
    loop = asyncio.get_running_loop()
    recipients = list(envelope_to)
    try:
        return await loop.run_in_executor(pool.threads, pool.read, raw, recipients, PARSE_TIMEOUT)
    except WorkerFailed as failure:
        reason = str(failure)
    except Exception:
        logger.exception("a parse worker failed")
        reason = "parse failed"
    logger.warning("a received message was not parsed: %s", reason)
    return await asyncio.to_thread(headers_only, raw, reason), None
