"""How a worker sleeps between claims: until woken, stopped, or its next row falls due."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import suppress
from datetime import datetime

from mailbridge.clock import Clock


async def sleep_until_due(
    next_due: Callable[[], Awaitable[datetime | None]],
    clock: Clock,
    poll: float,
    wake: asyncio.Event,
    stopping: asyncio.Event,
) -> None:
    """Sleep at most ``poll`` seconds, less when ``next_due`` says a row falls due sooner;
    ``wake`` or ``stopping`` end it early."""
    timeout = poll
    with suppress(Exception):  # a failed look only means the full poll interval
        due = await next_due()
        if due is not None:  # wake right when the next row falls due, not up to poll late
            until = (due - clock.now()).total_seconds()
            # Due already yet nothing was claimable (another runner holds it): a short
            # pause, not a busy loop.
            timeout = min(timeout, until if until > 0 else 0.05)
    waits = [asyncio.ensure_future(wake.wait()), asyncio.ensure_future(stopping.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits:
            waiter.cancel()
            with suppress(asyncio.CancelledError):
                await waiter
