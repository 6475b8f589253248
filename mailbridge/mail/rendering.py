"""Rendering a message — composing it and DKIM-signing it — here or in another process.

Composing and signing are the CPU-heavy part of a delivery (most of it the RSA
operation) and pure: a :class:`RenderJob` in, bytes out. The delivery worker's event
loop also runs the SMTP conversations and the database bookkeeping, so on a machine
with a second core the renderer moves the work there:

- :class:`LocalRenderer` composes on the event loop and signs with the RSA operation
  in a thread (OpenSSL releases the GIL);
- :class:`ProcessRenderer` sends jobs to a worker process, gathering the jobs that
  arrive in the same turn of the event loop into one call, so the hand-off costs each
  message far less than a call of its own would.

Both compose with ``mail.compose`` and sign with ``mail.dkim``, the hand-written path
past dkimpy's signer; a :class:`RenderPaths` given to a renderer makes it sign with
dkimpy instead — for the delivery bench alone, which times the two end to end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from mailbridge.mail import dkim, tracking
from mailbridge.mail.compose import AttachmentPart, Unsubscribe, compose
from mailbridge.mail.plain_text import html_to_text
from mailbridge.storage.tables import Email

logger = logging.getLogger(__name__)

# The Email columns composing reads.
EMAIL_FIELDS = (
    "id", "from_address", "to", "cc", "reply_to", "subject", "html", "text", "headers",
    "marketing", "message_id",
)  # fmt: skip
BATCH_LIMIT = 32
PARENT_CHECK_EVERY = 0.5  # seconds


@dataclass(frozen=True, slots=True)
class _Fields:
    """:data:`EMAIL_FIELDS` as composing reads them (cheaper than an ``Email`` object)."""

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
    text_from_html: bool = True  # html alone: a text/plain alternative made from it

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
    fields = _Fields(**job.email)
    if job.text_from_html and fields.text is None and fields.html:
        # From the html as written: the text's links are the real ones, not tracked.
        fields = dataclasses.replace(fields, text=html_to_text(fields.html))
    return compose(
        fields,
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
    def __init__(self, processes: int = 1, paths: RenderPaths = SHIPPED) -> None:
        self.processes = processes
        self.paths = paths
        self._pool: ProcessPoolExecutor | None = None
        self._batch: _Batch | None = None
        self._fallback = LocalRenderer(paths)

    async def start(self) -> None:
        if self._pool is not None:
            return
        # spawn: the runner has threads (database drivers, signing); forking them is unsafe.
        self._pool = ProcessPoolExecutor(
            self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )
        # Start the processes and import the rendering code now, not on the first email.
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._pool, render_many, []) for _ in range(self.processes))
        )

    async def render(self, job: RenderJob) -> bytes:
        if self._pool is None:
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
        assert self._pool is not None
        try:
            pending = asyncio.get_running_loop().run_in_executor(
                self._pool, render_many, batch.jobs, self.paths
            )
        except (BrokenProcessPool, RuntimeError) as exc:
            self._deliver_failure(batch, exc)
            return
        pending.add_done_callback(functools.partial(self._received, batch))

    def _received(self, batch: _Batch, pending: asyncio.Future[list[bytes | Exception]]) -> None:
        if pending.cancelled():
            for future in batch.futures:
                future.cancel()
            return
        error = pending.exception()
        if error is not None:
            self._deliver_failure(batch, error)
            return
        for future, result in zip(batch.futures, pending.result(), strict=True):
            if future.done():
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _deliver_failure(self, batch: _Batch, error: BaseException) -> None:
        if isinstance(error, BrokenProcessPool):
            # The worker process died: render here from now on rather than fail every email.
            logger.error("the rendering process died; rendering in the runner from now on")
            self._pool = None
            for job, future in zip(batch.jobs, batch.futures, strict=True):
                task = asyncio.ensure_future(self._fallback.render(job))
                task.add_done_callback(functools.partial(_forward, future))
            return
        for future in batch.futures:
            if not future.done():
                future.set_exception(error)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, True, cancel_futures=True)


def _exit_with_parent(parent: int) -> None:
    """In a rendering process: exit when the runner is gone, even killed (nothing else
    would tell it: it holds both ends of its own job queue)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_EVERY)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _forward(target: asyncio.Future[bytes], source: asyncio.Future[bytes]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())  # type: ignore[arg-type]
    else:
        target.set_result(source.result())
