"""Several processes on one listening socket (pre-fork), for a command whose event loop
is its limit: ``mailbridge inbound --processes N``."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Callable

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1


def run_forked(count: int, work: Callable[[], None]) -> None:
    """``work()`` in ``count`` processes: this one and ``count - 1`` forks of it, made
    before any event loop exists. When this one's ``work`` returns (SIGTERM), the forks
    get SIGTERM too and are waited for."""
    children: list[int] = []
    parent = os.getpid()
    for _ in range(count - 1):
        pid = os.fork()
        if pid == 0:  # a fork: its own loop, its own connections; never back into the caller
            _die_with(parent)
            code = 0
            try:
                work()
            except BaseException:
                logger.exception("a listener process failed")
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    try:
        work()
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _die_with(parent: int) -> None:
    """Kill this fork when its parent is killed (Linux's PR_SET_PDEATHSIG): a parent that
    stops cleanly stops its forks first, so one that did not crashed, and the forks go
    with it — none is left holding the port. (What a crash leaves unacknowledged the
    senders send again.)"""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above took effect
        os.kill(os.getpid(), signal.SIGKILL)
