"""What dead delivery runners leave on disk: outbox files and receipt books.

A runner killed between writing a file and committing its handover leaves a pending
outbox file; one that held no lease any more leaves a receipt book nobody settles from.
The delivery worker clears both at start-up, and outbox files again a few times a lease
while it runs, checking each against the leases first.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from mailbridge.mail.providers import OutboxProvider
from mailbridge.services import delivery
from mailbridge.storage.database import Database


async def sweep_outbox(database: Database, outbox: OutboxProvider) -> None:
    """Pending outbox files of attempts that are over (their runner was killed before
    the handover committed): listed first, then checked against the leases. Once another
    attempt holds the email (or it is settled), such a file is nobody's. A handed-over
    email (``sent``) keeps every pending file: settling it reads one."""
    files = await asyncio.to_thread(outbox.pending_files)
    if not files:
        return
    async with database.session() as session:
        found = await delivery.email_leases_and_statuses(
            session, [email_id for email_id, _ in files]
        )
    for email_id, attempt in files:
        owner, status = found.get(email_id, (None, "gone"))
        if owner != attempt and status != "sent":
            outbox.discard(email_id, attempt)


async def discard_old_receipts(database: Database, receipts: Path, owner: str) -> None:
    """Receipt books of runners other than ``owner`` that hold no lease any more:
    nothing left to settle from them."""
    others = [name for name in await asyncio.to_thread(_books, receipts) if name != owner]
    if not others:
        return
    async with database.session() as session:
        holding = await delivery.owners_holding_leases(session, others)
    for other in others:
        if other not in holding:
            with contextlib.suppress(FileNotFoundError):
                (receipts / f"{other}.receipts").unlink()


def _books(directory: Path) -> list[str]:
    """The runners with a receipt book in ``directory``."""
    if not directory.is_dir():
        return []
    return [path.name.removesuffix(".receipts") for path in directory.glob("*.receipts")]
