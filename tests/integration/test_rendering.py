"""Rendering (compose + DKIM) in a worker process: the same bytes, batched, and a
worker that dies is replaced by rendering in the runner."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from datetime import UTC, datetime

import dkim as dkimpy
import pytest

from mailbridge.mail import dkim
from mailbridge.mail.rendering import (
    LocalRenderer,
    ProcessRenderer,
    RenderJob,
    RenderPaths,
    SigningKey,
    Tracking,
    render,
    render_many,
)

KEYS = dkim.generate_key_pair()
DATE = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)


def job(number: int, *, key: SigningKey | None = None) -> RenderJob:
    return RenderJob(
        {
            "id": f"01900000-0000-7000-8000-{number:012d}",
            "from_address": "Shop <news@shop.io>",
            "to": [f"customer{number}@mail.net"],
            "cc": [],
            "reply_to": [],
            "subject": f"Receipt {number}",
            "html": '<p><a href="https://shop.io/order">Your order</a></p>',
            "text": "Your order",
            "headers": {},
            "marketing": False,
            "message_id": f"<{number}@shop.io>",
        },
        DATE,
        tracking=Tracking("https://mb.example", b"secret", True, True),
        signing_key=key or SigningKey("shop.io", "mailbridge", KEYS.private_key_pem),
    )


def verifies(message: bytes) -> bool:
    record = KEYS.txt_value.encode()
    return bool(dkimpy.verify(message, dnsfunc=lambda name, timeout=5: record))


def without_boundaries(message: bytes) -> bytes:
    # Boundaries are random per message; everything else is the same.
    return re.sub(rb"=_[0-9a-f]{24}", b"=_", message.split(b"\r\n", 1)[1])


async def test_a_worker_process_renders_what_the_runner_would() -> None:
    renderer = ProcessRenderer(1)
    await renderer.start()
    try:
        rendered = await asyncio.gather(*(renderer.render(job(n)) for n in range(40)))
    finally:
        await renderer.close()
    local = await LocalRenderer().render(job(7))
    assert all(verifies(message) for message in rendered)
    assert (
        without_boundaries(rendered[7]).split(b"\r\n\r\n", 1)[1]
        == (without_boundaries(local).split(b"\r\n\r\n", 1)[1])
    )
    assert b"https://mb.example/t/c/" in rendered[0]  # tracking applied in the process
    assert [b"<%d@shop.io>" % n in message for n, message in enumerate(rendered)] == [True] * 40


async def test_failures_come_back_to_their_own_job() -> None:
    bad = SigningKey("shop.io", "mailbridge", "not a key")
    results = render_many([job(1), job(2, key=bad), job(3)])
    assert isinstance(results[1], dkim.DkimError)
    assert verifies(results[0]) and verifies(results[2])  # type: ignore[arg-type]
    renderer = ProcessRenderer(1)
    await renderer.start()
    try:
        with pytest.raises(dkim.DkimError):
            await renderer.render(job(2, key=bad))
        assert verifies(await renderer.render(job(4)))
    finally:
        await renderer.close()


async def test_a_dead_worker_process_is_replaced_by_rendering_here() -> None:
    renderer = ProcessRenderer(1)
    await renderer.start()
    try:
        pool = renderer._pool
        assert pool is not None
        for pid in list(pool._processes):  # the worker processes
            os.kill(pid, signal.SIGKILL)
        async with asyncio.timeout(30):  # until the pool has seen its worker die
            while not pool._broken:
                await asyncio.sleep(0.01)
        messages = await asyncio.gather(*(renderer.render(job(n)) for n in range(3)))
        assert all(verifies(message) for message in messages)
        assert renderer._pool is None  # from now on, here
    finally:
        await renderer.close()


def test_render_is_compose_then_sign() -> None:
    message = render(job(5))
    assert message.startswith(b"DKIM-Signature:") and verifies(message)
    unsigned = render(RenderJob(job(5).email, DATE))
    assert not unsigned.startswith(b"DKIM-Signature:")


async def test_the_library_path_renders_the_same_message() -> None:
    """The delivery bench's switch: signing with dkimpy, in the runner or in a worker
    process."""
    shipped = without_boundaries(render(job(9))).split(b"\r\n\r\n", 1)[1]
    library = RenderPaths(hand_written_dkim=False)
    renderer = ProcessRenderer(1, library)
    await renderer.start()
    try:
        rendered = [await renderer.render(job(9))]
    finally:
        await renderer.close()
    rendered.append(await LocalRenderer(library).render(job(9)))
    for message in rendered:
        assert verifies(message)
        assert without_boundaries(message).split(b"\r\n\r\n", 1)[1] == shipped
