"""Handover receipts: what a runner leaves behind to say "this terminator was written".

Between the commit that records an email as ``sent`` and the write that completes
the handover there is the time the event loop takes to see the commit return — under
load a few milliseconds, enough for a kill to land in. A runner that dies there has
recorded a handover it never made; the next runner has to know, and the relay cannot
tell it. So a runner files a receipt for each terminator it writes, and the runner
that settles the handover goes by it.

The receipt is filed *just before* the write, not after it: the write to a loopback
or LAN relay wakes the relay, and the kernel often hands the CPU over right there —
the runner sits descheduled between its write and whatever comes next, for as long as
the machine is busy, so a kill landing then would find a written terminator with no
receipt (a duplicate). Between filing and the write there is no system call and
nothing that wakes anyone: a few hundred nanoseconds of this process's own work. A
write that fails, or that the kernel did not take at once, withdraws its receipt.

The receipts of one runner are a ring of fixed-size slots in a memory-mapped file
``<directory>/<runner>.receipts``: filing one is a memory copy (no system call), and
the pages belong to the kernel's page cache, so a receipt filed before the process is
killed is in the file afterwards. The ring has room for far more handovers than a
runner ever has in flight, so a slot is reused only long after its handover was
settled. A receipt names the email, the attempt number (the email's ``attempts``
when it was claimed), so a receipt of an earlier attempt is never taken for the one
being settled, and the envelope: each recipient of an email has its own transaction, its
own terminator and its own receipt, named by the recipient's place among the email's
(``#<n>`` after the attempt; the first's receipt has none, as before envelopes were
per recipient).
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

SLOT = 64
SLOTS = 65536  # 4 MiB a runner


_BLANK = b" " * (SLOT - 1) + b"\n"


def _record(email_id: str, attempt: int, envelope: int = 0) -> bytes:
    text = f"{email_id} {attempt}" + (f"#{envelope}" if envelope else "")
    return text.encode("ascii").ljust(SLOT - 1) + b"\n"


class ReceiptBook:
    """The receipts one runner files."""

    def __init__(self, directory: Path, runner: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{runner}.receipts"
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(descriptor, SLOT * SLOTS)
            self._map = mmap.mmap(descriptor, SLOT * SLOTS, mmap.MAP_SHARED)
        finally:
            os.close(descriptor)
        self._next = 0

    def file(self, email_id: str, attempt: int, envelope: int = 0) -> int:
        """Files a receipt; returns its slot (for :meth:`withdraw`)."""
        slot = self._next
        offset = slot * SLOT
        self._map[offset : offset + SLOT] = _record(email_id, attempt, envelope)
        self._next = (slot + 1) % SLOTS
        return slot

    def withdraw(self, slot: int) -> None:
        """Blanks a receipt whose terminator did not go out after all."""
        offset = slot * SLOT
        self._map[offset : offset + SLOT] = _BLANK

    def close(self) -> None:
        self._map.close()


def receipt_filed(
    directory: Path, runner: str, email_id: str, attempt: int, envelope: int = 0
) -> bool | None:
    """Whether ``runner`` filed a receipt for this attempt; None when its book is not
    here (another host's runner, or none kept): nothing to go by."""
    path = directory / f"{runner}.receipts"
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return None
    record = _record(email_id, attempt, envelope)
    position = content.find(record)
    while position != -1 and position % SLOT:
        position = content.find(record, position + 1)
    return position != -1
