"""Sign-in limits that slow a guesser down without locking the owner out.

A hard lock after N failures is a lock the attacker controls: anyone who knows an
address can keep its owner out. Instead, failures make the next attempt wait:

- **Per account and client address** (or per known device): after ``FREE_FAILURES``
  failures, each attempt waits twice as long as the last (1 s, 2 s, 4 s … up to
  ``MAX_DELAY``) from the latest failure. A guesser on one address slows to a crawl;
  the owner elsewhere is not touched.
- **Per account, from anywhere** (many addresses guessing one account): the same
  doubling after ``FREE_ACCOUNT_FAILURES`` — except for a *known device*, a browser
  that signed in to this account before (the ``mb_device`` cookie, an HMAC under the
  instance secret of the account and a random nonce). The right password from a known
  device always gets through this one.
- **Per client address, any account**: a moving window (``PER_ADDRESS``), as before.

A success clears the account's and the pair's failures. The counts live in process
memory (bounded: the oldest are forgotten past ``MAX_REMEMBERED``), as the limits did
before: with several API processes each keeps its own.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from limits import parse
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter

PER_ADDRESS = parse("20/minute")
FREE_FAILURES = 5
FREE_ACCOUNT_FAILURES = 20
MAX_DELAY = 15 * 60.0
MAX_REMEMBERED = 50_000


@dataclass
class _Failures:
    count: int
    last: float


def delay_after(failures: int, free: int) -> float:
    """Seconds to wait after ``failures`` failures when the first ``free`` cost nothing."""
    if failures < free:
        return 0.0
    return min(2.0 ** (failures - free), MAX_DELAY)


class SignInLimiter:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._by_address = MovingWindowRateLimiter(MemoryStorage())
        self._failures: OrderedDict[tuple[str, str], _Failures] = OrderedDict()

    def _wait(self, key: tuple[str, str], free: int) -> float:
        found = self._failures.get(key)
        if found is None:
            return 0.0
        return max(0.0, found.last + delay_after(found.count, free) - self._monotonic())

    @staticmethod
    def _keys(
        address: str, account: str, device: str | None
    ) -> tuple[tuple[str, str], tuple[str, str]]:
        """The failures an attempt counts against: (account, address or known device),
        and the account's from anywhere."""
        account = account.strip().lower()
        return (account, f"device:{device}" if device else address), (account, "")

    async def wait(self, address: str, account: str, device: str | None) -> float:
        """Seconds before this attempt may be tried (0: now). ``device``: the nonce of a
        known device's cookie for this account, if the browser sent one that verifies."""
        if not await self._by_address.hit(PER_ADDRESS, "sign-in-address", address):
            return 60.0
        pair, anywhere = self._keys(address, account, device)
        wait = self._wait(pair, FREE_FAILURES)
        if device is not None:
            return wait
        return max(wait, self._wait(anywhere, FREE_ACCOUNT_FAILURES))

    def failed(self, address: str, account: str, device: str | None) -> None:
        now = self._monotonic()
        for key in self._keys(address, account, device):
            found = self._failures.pop(key, None) or _Failures(0, now)
            found.count += 1
            found.last = now
            self._failures[key] = found
        while len(self._failures) > MAX_REMEMBERED:
            self._failures.popitem(last=False)

    def succeeded(self, address: str, account: str, device: str | None) -> None:
        for key in self._keys(address, account, device):
            self._failures.pop(key, None)
