"""The file outbox: one ``<email id>.eml`` per delivered message (the ``make run`` default).

A message is first written under ``.pending/<email id>.<attempt>.eml``; the handover
renames it to ``<email id>.eml`` right after the database recorded it as sent. The
rename is atomic, and the final name depends on the email alone, so each email
appears in the outbox exactly once whatever is killed when:

- killed before the commit: a pending file is left behind and the email is retried;
  the runner discards such leftovers when it starts;
- killed between the commit and the rename: :meth:`OutboxProvider.settle` (run for a
  ``sent`` email whose attempt never reported back) does the rename.

Files are not fsynced: they survive the process being killed, not the machine
losing power (use an SMTP relay for that).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from mailbridge.mail.providers.base import (
    Accepted,
    Delivery,
    Handover,
    Outcome,
    TemporaryFailure,
)

PENDING = ".pending"


class OutboxHandover:
    def __init__(self, pending: Path, final: Path) -> None:
        self.pending = pending
        self.final = final
        self._error: OSError | None = None

    def complete(self) -> None:
        try:
            os.replace(self.pending, self.final)
        except OSError as exc:
            self._error = exc

    def abandon(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pending.unlink()

    async def outcome(self) -> Outcome:
        if self._error is not None:
            # The rename failed, so the message is not in the outbox: safe to retry.
            return TemporaryFailure(f"could not move the message into the outbox: {self._error}")
        return Accepted(reply=f"written to {self.final}")


class OutboxProvider:
    name = "file"
    per_recipient = False  # one file an email, every recipient in its envelope headers

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.pending_directory = directory / PENDING

    def final_path(self, email_id: str) -> Path:
        return self.directory / f"{email_id}.eml"

    def pending_path(self, email_id: str, attempt: str) -> Path:
        return self.pending_directory / f"{email_id}.{attempt}.eml"

    async def prepare(self, delivery: Delivery, message: bytes) -> Handover | Outcome:
        pending = self.pending_path(delivery.email_id, delivery.attempt)
        envelope = _envelope_headers(delivery)
        try:
            await asyncio.to_thread(_write, pending, envelope + message)
        except OSError as exc:
            return TemporaryFailure(f"cannot write to the outbox: {exc}")
        return OutboxHandover(pending, self.final_path(delivery.email_id))

    async def settle(self, delivery: Delivery) -> Outcome:
        final = self.final_path(delivery.email_id)
        # The handover's own file, else any pending file of the email: they all hold the
        # same email, and the attempts that wrote them are over.
        own = self.pending_path(delivery.email_id, delivery.attempt)
        pending = [
            path
            for path in self.pending_directory.glob(f"{delivery.email_id}.*.eml")
            if path != own
        ]
        if own.exists():
            pending.append(own)
        if not final.exists() and pending:
            handover = OutboxHandover(pending.pop(), final)
            handover.complete()
            outcome = await handover.outcome()
        elif final.exists():
            outcome = Accepted(reply=f"written to {final}")
        else:
            outcome = TemporaryFailure(
                "the handed-over message is not in the outbox; writing it again", retry_now=True
            )
        for leftover in pending:
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        return outcome

    def pending_files(self) -> list[tuple[str, str]]:
        """(email id, attempt) of every pending file (blocking: run it in a thread)."""
        pairs = []
        for path in _pending_files(self.pending_directory):
            email_id, _, attempt = path.name.removesuffix(".eml").partition(".")
            pairs.append((email_id, attempt))
        return pairs

    def discard(self, email_id: str, attempt: str) -> None:
        """Delete the pending file of an attempt that is over (its email is no longer
        leased to it); list them with :meth:`pending_files` *before* reading the leases,
        so a file of an attempt that starts meanwhile is never taken for a leftover."""
        with contextlib.suppress(FileNotFoundError):
            self.pending_path(email_id, attempt).unlink()

    async def close(self) -> None:
        return None


def _envelope_headers(delivery: Delivery) -> bytes:
    # What a mailbox would record: the envelope is not otherwise visible (Bcc).
    lines = [f"Return-Path: <{delivery.sender}>"]
    lines.extend(f"Envelope-To: {recipient}" for recipient in delivery.recipients)
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.write(data)


def _pending_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [path for path in directory.iterdir() if path.suffix == ".eml"]
