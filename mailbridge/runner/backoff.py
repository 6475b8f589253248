"""How a worker's loop goes on after a failed round: it waits, longer each time.

A round that fails waits ``FIRST`` seconds, then twice as long after each further
failure, up to ``CAP``; a round that succeeds starts over. When the database is out of
reach (:func:`mailbridge.storage.outages.is_unavailable`: a PostgreSQL restart, a cut
connection, SQLite locked past its timeout) the outage is logged as one line when it
starts and one when it ends, not a traceback a round; anything else is a bug and keeps
its traceback. Leases taken before an outage are not renewed by anyone during it: they
run out, and the claims made after it take them up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mailbridge.storage.outages import describe, is_unavailable

logger = logging.getLogger(__name__)

FIRST = 0.25  # seconds after the first failure
CAP = 5.0  # the longest wait between two rounds


class Backoff:
    """The waits of one worker's loop; ``failed`` after a round that raised, ``succeeded``
    after one that did not."""

    def __init__(self, worker: str, *, first: float = FIRST, cap: float = CAP) -> None:
        self.worker = worker
        self.first = first
        self.cap = cap
        self.failures = 0  # rounds failed in a row
        self.outage = False  # the failures say the database is out of reach

    @property
    def delay(self) -> float:
        """The wait after the failures so far."""
        if self.failures == 0:
            return 0.0
        return min(self.cap, self.first * 2.0 ** (self.failures - 1))

    async def failed(
        self, exc: BaseException, doing: str, stopping: asyncio.Event | None = None
    ) -> None:
        """Log ``exc`` (an outage once, anything else with its traceback) and wait the
        next delay, or until ``stopping`` is set."""
        self.failures += 1
        if is_unavailable(exc):
            if not self.outage:
                self.outage = True
                logger.warning(
                    "%s: database unavailable while %s (%s); retrying every %.2g s up to %.2g s",
                    self.worker, doing, describe(exc), self.first, self.cap,
                )  # fmt: skip
        else:
            logger.error("%s: %s failed; retrying in %.2g s", self.worker, doing, self.delay,
                         exc_info=exc)  # fmt: skip
        await self._wait(stopping)

    def succeeded(self) -> None:
        if self.outage:
            logger.warning("%s: database reachable again after %d failed rounds",
                           self.worker, self.failures)  # fmt: skip
        self.failures = 0
        self.outage = False

    async def _wait(self, stopping: asyncio.Event | None) -> None:
        if stopping is None:
            await asyncio.sleep(self.delay)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.delay):
                await stopping.wait()
