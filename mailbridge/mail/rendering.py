"""Rendering a message — composing it and DKIM-signing it — here or in another process.

Composing and signing are the CPU-heavy part of a delivery (~0.5 ms a message, most of
it the RSA operation) and pure: a :class:`RenderJob` in, bytes out. The delivery
worker's event loop also runs the SMTP conversations and the database bookkeeping,
so on a machine with a second core the renderer moves the work there:

- :class:`LocalRenderer` composes on the event loop and signs with the RSA operation
  in a thread (OpenSSL releases the GIL);
- :class:`ProcessRenderer` sends jobs to a worker process over a socket pair the event
  loop reads and writes itself, gathering the jobs that arrive in the same turn of
  the loop into one frame, so the hand-off costs a few microseconds a message rather
  than the ~150 µs of one call per message.

Both compose with ``mail.compose`` and sign with ``mail.dkim``, the hand-written path
past dkimpy's signer; a :class:`RenderPaths` given to a renderer makes it sign with
dkimpy instead — for the delivery bench alone, which times the two end to end.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import io
import logging
import multiprocessing
import multiprocessing.context
import pickle
import signal
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from mailbridge.mail import dkim, tracking
from mailbridge.mail.compose import AttachmentPart, Unsubscribe, compose
from mailbridge.storage.tables import Email

logger = logging.getLogger(__name__)

# The Email columns composing reads.
EMAIL_FIELDS = (
    "id", "from_address", "to", "cc", "reply_to", "subject", "html", "text", "headers",
    "marketing", "message_id",
)  # fmt: skip
# Jobs a frame carries at most: ~3 ms of rendering, so results stream back while the
# process works on the next frame (32 made the first message of a claim wait ~12 ms
# for the last, and the pipeline ran in bursts).
BATCH_LIMIT = 8
STOP_WAIT = 5.0  # seconds a rendering process gets to exit once its socket is closed
_HEADER = struct.Struct("!Q")  # a frame's length


@dataclass(frozen=True, slots=True)
class _Fields:
    """:data:`EMAIL_FIELDS` as composing reads them (an ``Email`` object costs ~20 µs)."""

    id: str
    from_address: str
    to: list[str]
    cc: list[str]
    reply_to: list[str]
    subject: str
    html: str | None
    text: str | None
    headers: dict[str, Any]
    marketing: bool
    message_id: str


@dataclass(frozen=True, slots=True)
class RenderPaths:
    """Which code signs: the hand-written signer (what ships) or the library path it
    replaces, dkimpy's ``dkim.sign`` (``dkim.sign_with_dkimpy``). A switch for the
    delivery bench (bench/delivery.py), not a setting."""

    hand_written_dkim: bool = True


SHIPPED = RenderPaths()


@dataclass(frozen=True)
class Tracking:
    base_url: str
    secret: bytes
    open_tracking: bool
    click_tracking: bool


@dataclass(frozen=True)
class SigningKey:
    domain: str
    selector: str
    private_key_pem: str


@dataclass(frozen=True)
class RenderJob:
    """Everything composing and signing one message needs; plain data, so it pickles."""

    email: dict[str, Any]
    date: datetime
    attachments: tuple[AttachmentPart, ...] = ()
    unsubscribe: Unsubscribe | None = None
    tracking: Tracking | None = None
    signing_key: SigningKey | None = None

    @classmethod
    def of(cls, email: Email, **options: Any) -> RenderJob:
        return cls({name: getattr(email, name) for name in EMAIL_FIELDS}, **options)


def compose_job(job: RenderJob, paths: RenderPaths = SHIPPED) -> bytes:
    transform: Callable[[str], str] | None = None
    if job.tracking is not None:
        transform = functools.partial(
            tracking.rewrite_html,
            base_url=job.tracking.base_url,
            secret=job.tracking.secret,
            email_id=job.email["id"],
            open_tracking=job.tracking.open_tracking,
            click_tracking=job.tracking.click_tracking,
        )
    return compose(
        _Fields(**job.email),
        job.attachments,
        date=job.date,
        unsubscribe=job.unsubscribe,
        transform_html=transform,
    )


def render(job: RenderJob, paths: RenderPaths = SHIPPED) -> bytes:
    """The composed, signed message (raises :class:`dkim.DkimError`)."""
    message = compose_job(job, paths)
    key = job.signing_key
    if key is None:
        return message
    if not paths.hand_written_dkim:
        return dkim.sign_with_dkimpy(message, key.domain, key.selector, key.private_key_pem)
    return dkim.sign(message, key.domain, key.selector, key.private_key_pem)


def render_many(jobs: list[RenderJob], paths: RenderPaths = SHIPPED) -> list[bytes | Exception]:
    """:func:`render` for a batch, each failure returned in its place (worker process)."""
    results: list[bytes | Exception] = []
    for job in jobs:
        try:
            results.append(render(job, paths))
        except Exception as exc:
            results.append(exc)
    return results


class Renderer(Protocol):
    async def start(self) -> None: ...

    async def render(self, job: RenderJob) -> bytes: ...

    async def close(self) -> None: ...


class LocalRenderer:
    def __init__(self, paths: RenderPaths = SHIPPED) -> None:
        self.paths = paths

    async def start(self) -> None:
        return None

    async def render(self, job: RenderJob) -> bytes:
        key = job.signing_key
        if key is None or not self.paths.hand_written_dkim:
            return render(job, self.paths)  # dkimpy's RSA holds the GIL: no thread helps
        message = compose_job(job, self.paths)
        return await dkim.sign_off_loop(message, key.domain, key.selector, key.private_key_pem)

    async def close(self) -> None:
        return None


@dataclass
class _Batch:
    jobs: list[RenderJob] = field(default_factory=list)
    futures: list[asyncio.Future[bytes]] = field(default_factory=list)


class ProcessRenderer:
    """Renders in ``processes`` worker processes, each fed through a socket pair that the
    event loop reads and writes itself: no threads between the loop and the processes
    (``ProcessPoolExecutor``'s feeder and result threads cost the loop's process ~10 %
    of its CPU in the delivery bench, most of it contending for the GIL)."""

    def __init__(self, processes: int = 1, paths: RenderPaths = SHIPPED) -> None:
        self.processes = processes
        self.paths = paths
        self._workers: list[_RenderProcess] = []
        self._started = False
        self._batch: _Batch | None = None
        self._fallback = LocalRenderer(paths)
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def process_ids(self) -> list[int]:
        """The worker processes rendering now (none: rendering in this process)."""
        return [worker.pid for worker in self._workers if worker.pid is not None]

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        # spawn: the runner has threads (database drivers, signing); forking them is unsafe.
        context = multiprocessing.get_context("spawn")
        self._workers = [
            _RenderProcess(context, self.paths, self._died) for _ in range(self.processes)
        ]
        # Import the rendering code in the processes now, not on the first email.
        await asyncio.gather(*(worker.ready() for worker in self._workers))

    async def render(self, job: RenderJob) -> bytes:
        if not self._workers:
            return await self._fallback.render(job)
        loop = asyncio.get_running_loop()
        if self._batch is None:
            self._batch = _Batch()
            # Sent once this turn of the event loop is over: everything queued by then goes.
            loop.call_soon(self._send)
        future: asyncio.Future[bytes] = loop.create_future()
        self._batch.jobs.append(job)
        self._batch.futures.append(future)
        if len(self._batch.jobs) >= BATCH_LIMIT:
            self._send()
        return await future

    def _send(self) -> None:
        batch, self._batch = self._batch, None
        if batch is None or not batch.jobs:
            return
        if not self._workers:
            self._render_here(batch)
            return
        min(self._workers, key=_RenderProcess.load).send(batch)

    def _died(self, worker: _RenderProcess, unanswered: list[_Batch]) -> None:
        """A worker process died: its batches, and from then on everything when it was
        the last one, are rendered here rather than failed."""
        closing = asyncio.create_task(worker.close())  # reaps the process
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        if worker in self._workers:
            self._workers.remove(worker)
            logger.error("a rendering process died; %s", "rendering in the runner from now on"
                         if not self._workers else "the others go on")  # fmt: skip
        for batch in unanswered:
            self._render_here(batch)

    def _render_here(self, batch: _Batch) -> None:
        for job, future in zip(batch.jobs, batch.futures, strict=True):
            task = asyncio.ensure_future(self._fallback.render(job))
            task.add_done_callback(functools.partial(_forward, future))

    async def close(self) -> None:
        workers, self._workers = self._workers, []
        self._started = False
        await asyncio.gather(*(worker.close() for worker in workers), *self._closing)


class _RenderProcess:
    """One worker process and the loop's end of its socket: batches of jobs go out as
    frames (a length, then the pickle), their results come back in the same order."""

    def __init__(
        self,
        context: multiprocessing.context.SpawnContext,
        paths: RenderPaths,
        died: Callable[[_RenderProcess, list[_Batch]], None],
    ) -> None:
        ours, theirs = socket.socketpair()
        self._process = context.Process(
            target=_serve, args=(theirs, paths), name="mailbridge-render", daemon=True
        )
        self._process.start()
        theirs.close()
        self._socket = ours
        self._died = died
        self._waiting: collections.deque[_Batch] = collections.deque()
        self._jobs = 0
        self._streams: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.ensure_future(asyncio.open_connection(sock=ours))
        )
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reading: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def load(self) -> int:
        """Jobs sent and not answered yet."""
        return self._jobs

    async def ready(self) -> None:
        """Wait for the process to answer an empty batch (its imports done)."""
        reader, writer = await self._streams
        self._reading = asyncio.create_task(self._read(reader), name="render-results")
        self._waiting.append(_Batch())
        writer.write(_frame([]))
        await self._ready

    def send(self, batch: _Batch) -> None:
        _, writer = self._streams.result()
        self._waiting.append(batch)
        self._jobs += len(batch.jobs)
        writer.write(_frame(batch.jobs))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
                results: list[bytes | Exception] = pickle.loads(await reader.readexactly(size))
                batch = self._waiting.popleft()
                self._jobs -= len(batch.jobs)
                if not batch.jobs and not self._ready.done():
                    self._ready.set_result(None)
                _answer(batch, results)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            if self._closing:
                return
            if not self._ready.done():
                self._ready.set_exception(RuntimeError(f"the rendering process died: {exc}"))
            unanswered = [batch for batch in self._waiting if batch.jobs]
            self._waiting.clear()
            self._jobs = 0
            self._died(self, unanswered)

    async def close(self) -> None:
        self._closing = True
        if self._streams.done() and not self._streams.exception():
            _, writer = self._streams.result()
            writer.close()  # the process reads the end of its input and exits
        else:
            self._socket.close()
        if self._reading is not None:
            self._reading.cancel()
        for batch in self._waiting:
            for future in batch.futures:
                future.cancel()
        await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._process.join(STOP_WAIT)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


def _frame(jobs: list[RenderJob]) -> bytes:
    payload = pickle.dumps(jobs, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


def _answer(batch: _Batch, results: list[bytes | Exception]) -> None:
    for future, result in zip(batch.futures, results, strict=True):
        if future.done():
            continue
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)


def _serve(connection: socket.socket, paths: RenderPaths) -> None:
    """A rendering process: batches in, results out, until the runner closes its end of
    the socket — or dies, which closes (or resets) it too: either way, a quiet exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the runner, which stops us
    with contextlib.suppress(OSError), connection:
        incoming, out = connection.makefile("rb"), connection.makefile("wb")
        while True:
            jobs = _read_frame(incoming)
            if jobs is None:
                return
            results = render_many(jobs, paths)
            try:
                payload = pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text does
                payload = pickle.dumps([_picklable(result) for result in results])
            out.write(_HEADER.pack(len(payload)) + payload)
            out.flush()


def _read_frame(incoming: io.BufferedReader) -> list[RenderJob] | None:
    """The next batch, or None when the runner's end is closed (or it died mid-frame)."""
    header = incoming.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = incoming.read(size)
    if len(payload) < size:
        return None
    jobs: list[RenderJob] = pickle.loads(payload)
    return jobs


def _picklable(result: bytes | Exception) -> bytes | Exception:
    if isinstance(result, bytes):
        return result
    try:
        pickle.dumps(result)
    except Exception:
        return RuntimeError(f"{type(result).__name__}: {result}")
    return result


def _forward(target: asyncio.Future[bytes], source: asyncio.Future[bytes]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())  # type: ignore[arg-type]
    else:
        target.set_result(source.result())
