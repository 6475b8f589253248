"""WAL checkpoints of a SQLite file, on a thread of their own.

In WAL mode a commit only appends to the log; the checkpoint that copies the log back
into the database file is the one write that syncs, and by default SQLite runs it
inside whichever commit finds the log over 1,000 pages. On a busy database that put a
checkpoint — copying and fsyncing megabytes of scattered pages — into every few
commits of the runner's batches and the API's group commits: measured, it was much of
the time the engine took to wake 10,000 runs.

So every connection of a :class:`~mailbridge.storage.database.Database` on a SQLite
file is opened with ``wal_autocheckpoint=0``, reports its commits here
(:meth:`WalCheckpointer.written`), and a daemon thread with a connection of its own
runs a ``PASSIVE`` checkpoint (it never blocks readers or writers) shortly after
writes, at most once every :data:`CHECKPOINT_EVERY` seconds while they go on. The
thread starts with the first write and stops at :meth:`WalCheckpointer.close`, which
runs a last checkpoint so that a stopped process leaves its writes in the file.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

logger = logging.getLogger(__name__)

CHECKPOINT_EVERY = 1.0  # seconds between checkpoints while writes keep coming


def checkpoint(path: str) -> None:
    """One passive checkpoint of ``path`` through a short-lived connection."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
    finally:
        connection.close()


class WalCheckpointer:
    """Checkpoints of one SQLite file, run off every writer's path."""

    def __init__(self, path: str, *, every: float | None = None) -> None:
        self.path = path
        self.every = CHECKPOINT_EVERY if every is None else every
        self._written = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def written(self) -> None:
        """A transaction committed (or is about to): checkpoint soon. Cheap, thread-safe."""
        self._written.set()
        if self._thread is None:
            with self._start_lock:
                if self._thread is None and not self._stopping.is_set():
                    self._thread = threading.Thread(
                        target=self._run, name="sqlite-checkpoints", daemon=True
                    )
                    self._thread.start()

    def close(self) -> None:
        """Stop the thread after a last checkpoint of what was written."""
        with self._start_lock:
            self._stopping.set()
            thread = self._thread
        self._written.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            self._written.wait()
            # Let the commit that woke us (and those right behind it) finish first.
            self._stopping.wait(self.every)
            self._written.clear()
            try:
                checkpoint(self.path)
            except sqlite3.Error:  # a missing or locked file: the next write tries again
                logger.warning("a checkpoint of %s failed", self.path, exc_info=True)
            if self._stopping.is_set():
                return
