"""The SMTP handover: a message whose ``DATA`` was sent but whose final ``.`` waits.

``smtp`` stops each transaction short of the terminator so that the journal can commit
``sent`` first: a relay whose client disappears before the ``.`` discards the message
(RFC 5321 §4.1.1.4). :class:`SmtpHandover` holds the connection until then, files the
receipt and writes the terminator (:meth:`~SmtpHandover.complete`), and reads the
relay's answer (:meth:`~SmtpHandover.outcome`). Kept apart from the provider's pool and
envelope, it needs of the provider only a way to give the connection back.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Protocol, cast

import aiosmtplib
from aiosmtplib.protocol import SMTPProtocol
from aiosmtplib.response import SMTPResponse

from mailbridge.mail.providers.base import (
    Accepted,
    Outcome,
    PermanentFailure,
    TemporaryFailure,
    Unconfirmed,
)
from mailbridge.mail.providers.receipts import ReceiptBook

# Enhanced status codes (RFC 3463) that name the recipient: 5.1.x address, 5.2.x mailbox.
_RECIPIENT_PROBLEM = re.compile(r"^\s*5\.[12]\.\d{1,3}\b")
TRANSPORT_ERRORS = (aiosmtplib.SMTPException, OSError, TimeoutError)


class Connection:
    """A pooled relay connection, as the provider lends it and a handover holds it."""

    def __init__(self, smtp: aiosmtplib.SMTP, *, pipelining: bool) -> None:
        self.smtp = smtp
        self.last_used = time.monotonic()
        self.needs_reset = False
        self.pipelining = pipelining and smtp.supports_extension("pipelining")

    @property
    def protocol(self) -> SMTPProtocol:
        if self.smtp.protocol is None:
            raise aiosmtplib.SMTPServerDisconnected("connection lost")
        return self.smtp.protocol


class _Pool(Protocol):
    """What a handover needs of its provider (``smtp.SmtpProvider``)."""

    @property
    def reply_timeout(self) -> float: ...

    def _release(self, connection: Connection, *, reusable: bool) -> None: ...


class SmtpHandover:
    def __init__(
        self,
        provider: _Pool,
        connection: Connection,
        reader: asyncio.Future[SMTPResponse],
        accepted: tuple[str, ...],
        rejected: dict[str, str],
        held: bytes = b"",
    ) -> None:
        self._provider = provider
        self._held = held  # content not written yet: it precedes the terminator
        self._connection = connection
        self._reader = reader
        self._accepted = accepted
        self._rejected = rejected
        self._lost: Exception | None = None
        self._released = False
        self.receipt: tuple[ReceiptBook, str, int, int] | None = None

    def complete(self) -> None:
        # The receipt before the write (see ``receipts``: after it, the runner may sit
        # descheduled with the terminator written and no receipt yet).
        book: ReceiptBook | None = None
        slot = 0
        if self.receipt is not None:
            book, email_id, attempt, envelope = self.receipt
            slot = book.file(email_id, attempt, envelope)
        protocol = self._connection.protocol
        try:
            protocol.write(self._held + b".\r\n")
        except aiosmtplib.SMTPServerDisconnected as exc:
            self._lost = exc
            if book is not None:
                book.withdraw(slot)
            return
        transport = cast(asyncio.WriteTransport | None, protocol.transport)
        if book is not None and (transport is None or transport.get_write_buffer_size()):
            # Still in our buffer (the kernel's was full): a kill now would lose it, and
            # the relay would discard the message, so it must be sent again.
            book.withdraw(slot)

    def abandon(self) -> None:
        # Closing in the middle of DATA is how a client takes a message back.
        self._reader.cancel()
        self._release(reusable=False)

    def _release(self, *, reusable: bool) -> None:
        if not self._released:
            self._released = True
            self._provider._release(self._connection, reusable=reusable)

    async def outcome(self) -> Outcome:
        if self._lost is not None:
            self._reader.cancel()
            self._release(reusable=False)
            # The terminator never left, so the relay discarded the message.
            return TemporaryFailure(f"connection lost before the end of data: {self._lost}")
        try:
            async with asyncio.timeout(self._provider.reply_timeout):
                response = await self._reader
        except TRANSPORT_ERRORS as exc:
            self._release(reusable=False)
            return Unconfirmed(f"no answer to the end of data: {describe(exc)}")
        except BaseException:
            self._release(reusable=False)
            raise
        self._release(reusable=True)
        reply = f"{response.code} {response.message}"
        if 200 <= response.code < 300:
            return Accepted(reply=reply, rejected=dict(self._rejected))
        if response.code < 500:
            return TemporaryFailure(f"end of data deferred: {reply}")
        bounced = self._accepted if _RECIPIENT_PROBLEM.match(response.message) else ()
        return PermanentFailure(f"end of data refused: {reply}", bounced)


async def drained(protocol: SMTPProtocol) -> None:
    """Wait until everything written has left asyncio's buffer for the kernel's: only
    bytes the kernel holds are still sent if this process is killed."""
    while True:
        transport = cast(asyncio.WriteTransport | None, protocol.transport)
        if transport is None or transport.is_closing():
            raise aiosmtplib.SMTPServerDisconnected("connection lost while sending data")
        if transport.get_write_buffer_size() == 0:
            return
        await asyncio.sleep(0.001)


def describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
