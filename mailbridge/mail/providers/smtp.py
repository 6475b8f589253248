"""Delivery through an SMTP relay (``MAILBRIDGE_SMTP_URL``, read by ``smtp_relay``), over
pooled connections. The answer to the end of data gets RFC 5321's 10 minutes; a user in
the URL logs in after the greeting (and TLS).

aiosmtplib does the connecting, TLS, EHLO and AUTH. To a relay that offers PIPELINING
(RFC 2920) the envelope and ``DATA`` go in one write and their replies are read together
(``smtp_pipelining``): two round trips a message rather than four; to one that does not,
or with ``pipelining=false`` in the URL, a command at a time. The DATA phase is split
here so that the database can record the handover before the relay can accept the message:
``DATA``, and for large content the dot-stuffed content *without* the terminating
``.``, waiting until it has left our buffers — then the caller commits ``sent`` and
:meth:`SmtpHandover.complete` (in ``smtp_handover``) writes ``.\\r\\n`` (preceded by
the content when it is at most :data:`HELD_CONTENT`: one write). A relay whose client
disappears before the terminator discards the message (RFC 5321 §4.1.1.4), so a crash
before the commit delivers nothing.

Just before the terminator, :meth:`SmtpHandover.complete` files a receipt (see
``receipts``: a memory copy, nanoseconds before the write). If the runner dies before
the outcome is recorded, :meth:`SmtpProvider.settle` goes by the receipts of the
runner that made the handover: a receipt means the terminator was written (the email
counts as delivered, unconfirmed); none means it was not — the relay discarded the
unterminated message — so the email is delivered again. No receipt book at all
(another host's runner, or none kept) leaves only the assumption that it was written.

Connections stay open between messages, up to ``pool_size`` at once; one that sat
idle is checked with NOOP, one left mid-transaction is reset with RSET, and one that
fails is closed and replaced on the next use. One left idle for ``idle_timeout`` seconds
(``MAILBRIDGE_SMTP_IDLE_TIMEOUT``, 30 s: well under the 300 s after which Postfix and
others time a silent client out) is closed with QUIT, as every idle one is on close (the
runner's stop): the relay never logs a timeout of ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import time
from pathlib import Path

import aiosmtplib
from aiosmtplib.protocol import normalize_message_line_endings
from aiosmtplib.response import SMTPResponse

from mailbridge.mail.providers.base import (
    Accepted,
    Delivery,
    Handover,
    Outcome,
    PermanentFailure,
    TemporaryFailure,
)
from mailbridge.mail.providers.receipts import ReceiptBook, receipt_filed
from mailbridge.mail.providers.smtp_handover import (
    TRANSPORT_ERRORS,
    Connection,
    SmtpHandover,
    describe,
    drained,
)
from mailbridge.mail.providers.smtp_pipelining import exchange
from mailbridge.mail.providers.smtp_relay import SmtpRelay, ehlo_name

# RFC 5321 §4.5.3.2.6 allows 10 minutes for the answer to the end of data.
REPLY_TIMEOUT = 600.0
IDLE_CHECK_AFTER = 10.0  # seconds idle before a pooled connection is NOOP-checked
IDLE_TIMEOUT = 30.0  # seconds idle before a pooled connection is closed with QUIT
QUIT_TIMEOUT = 2.0
# Content up to this size is written with its terminator after the commit, in one write
# (each send on loopback cost the runner CPU in the delivery bench); larger content goes
# out before the commit, so that the terminator's write is small enough for the kernel
# to take at once. 16 KiB is the send buffer a new TCP connection starts with
# (net.ipv4.tcp_wmem).
HELD_CONTENT = 16 * 1024
_LEADING_DOT = re.compile(rb"(?m)^\.")


def data_content(message: bytes) -> bytes:
    """``message`` as DATA sends it: every line ending in CRLF (the last one too) and
    a dot that starts a line doubled (RFC 5321 §4.5.2). A composed message is CRLF
    throughout and rarely has a line starting with a dot: counting and one search tell,
    without rewriting it byte by byte."""
    line_ends = message.count(b"\r\n")
    if message.count(b"\n") != line_ends or message.count(b"\r") != line_ends:
        message = normalize_message_line_endings(message)
    elif not message.endswith(b"\r\n"):
        message += b"\r\n"
    if message.startswith(b".") or b"\n." in message:
        message = _LEADING_DOT.sub(b"..", message)
    return message


class SmtpProvider:
    name = "smtp"
    per_recipient = True

    def __init__(
        self,
        relay: SmtpRelay,
        *,
        pool_size: int,
        local_hostname: str = "localhost",
        tls_context: ssl.SSLContext | None = None,
        reply_timeout: float = REPLY_TIMEOUT,
        receipts: Path | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self.relay = relay
        self.receipts = receipts
        self._books: dict[str, ReceiptBook] = {}
        self.pool_size = pool_size
        self.local_hostname = ehlo_name(local_hostname)
        self.tls_context = tls_context
        self.reply_timeout = reply_timeout
        self.connections_opened = 0
        self.idle_timeout = idle_timeout
        self._idle: list[Connection] = []
        self._slots = asyncio.Semaphore(pool_size)
        self._reaper: asyncio.Task[None] | None = None

    # --- the pool -----------------------------------------------------------------

    async def _connect(self) -> Connection:
        relay = self.relay
        smtp = aiosmtplib.SMTP(
            hostname=relay.host,
            port=relay.port,
            username=relay.username,
            password=relay.password,
            local_hostname=self.local_hostname,
            timeout=relay.timeout,
            use_tls=relay.implicit_tls,
            start_tls=relay.starttls,
            validate_certs=relay.verify_certificates,
            tls_context=self.tls_context,
        )
        await smtp.connect()
        if smtp.is_ehlo_or_helo_needed:
            await smtp.ehlo()  # now, so that the extensions (SIZE, SMTPUTF8) are known
        self.connections_opened += 1
        return Connection(smtp, pipelining=relay.pipelining)

    async def _acquire(self, *, fresh: bool = False) -> tuple[Connection, bool]:
        """A connection ready for MAIL FROM, and whether it was reused from the pool."""
        await self._slots.acquire()
        try:
            while self._idle and not fresh:
                connection = self._idle.pop()
                if await self._ready(connection):
                    return connection, True
                connection.smtp.close()
            return await self._connect(), False
        except BaseException:
            self._slots.release()
            raise

    async def _ready(self, connection: Connection) -> bool:
        if not connection.smtp.is_connected:
            return False
        try:
            if connection.needs_reset:
                await connection.smtp.rset()
                connection.needs_reset = False
            elif time.monotonic() - connection.last_used > IDLE_CHECK_AFTER:
                await connection.smtp.noop()
        except TRANSPORT_ERRORS:
            return False
        return True

    def _release(self, connection: Connection, *, reusable: bool) -> None:
        if reusable and connection.smtp.is_connected:
            connection.last_used = time.monotonic()
            self._idle.append(connection)
            if self._reaper is None:  # one for the pool's life, from its first release
                self._reaper = asyncio.get_running_loop().create_task(
                    self._reap(), name="smtp-pool-reaper"
                )
        else:
            connection.smtp.close()
        self._slots.release()

    async def _reap(self) -> None:
        """Close connections idle for ``idle_timeout`` with QUIT: wakes when the oldest
        idle one is due (every ``idle_timeout`` when none is idle), until the pool closes."""
        while True:
            now = time.monotonic()
            expired = [each for each in self._idle if now - each.last_used >= self.idle_timeout]
            if expired:
                self._idle = [each for each in self._idle if each not in expired]
                for connection in expired:
                    await _say_goodbye(connection)
                continue
            oldest = min((each.last_used for each in self._idle), default=now)
            await asyncio.sleep(oldest + self.idle_timeout - now)

    async def close(self) -> None:
        books, self._books = self._books, {}
        for book in books.values():
            book.close()
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        idle, self._idle = self._idle, []
        for connection in idle:
            await _say_goodbye(connection)

    # --- receipts -----------------------------------------------------------------

    def _book(self, runner: str) -> ReceiptBook | None:
        if self.receipts is None:
            return None
        book = self._books.get(runner)
        if book is None:
            book = self._books[runner] = ReceiptBook(self.receipts, runner)
        return book

    # --- a delivery ---------------------------------------------------------------

    async def prepare(self, delivery: Delivery, message: bytes) -> Handover | Outcome:
        content = data_content(message)
        try:
            book = self._book(delivery.attempt)
        except OSError as exc:
            return TemporaryFailure(f"cannot keep handover receipts: {exc}")
        # A pooled connection the relay dropped while idle fails on first use: that is
        # no reason to delay the email, so try once more on a new connection.
        for fresh in (False, True):
            try:
                connection, reused = await self._acquire(fresh=fresh)
            except TRANSPORT_ERRORS as exc:
                return TemporaryFailure(f"cannot reach the relay: {describe(exc)}")
            try:
                return await self._begin(connection, delivery, content, book)
            except TRANSPORT_ERRORS as exc:
                self._release(connection, reusable=False)
                if not (reused and isinstance(exc, aiosmtplib.SMTPServerDisconnected)):
                    return TemporaryFailure(f"relay connection failed: {describe(exc)}")
            except BaseException:
                self._release(connection, reusable=False)
                raise
        return TemporaryFailure("relay connection failed twice")

    async def _begin(
        self, connection: Connection, delivery: Delivery, content: bytes, book: ReceiptBook | None
    ) -> Handover | Outcome:
        smtp = connection.smtp
        options: list[bytes] = []
        if smtp.supports_extension("size"):
            options.append(b"SIZE=%d" % len(content))
        encoding = "ascii"
        if delivery.needs_smtputf8:
            if not smtp.supports_extension("smtputf8"):
                self._release(connection, reusable=True)
                return PermanentFailure("the relay does not accept internationalized addresses")
            options.append(b"SMTPUTF8")
            encoding = "utf-8"
        # One deadline for the whole envelope and content, rather than a timer per command.
        async with asyncio.timeout(self.relay.timeout):
            handover = await self._transaction(connection, delivery, content, options, encoding)
        if isinstance(handover, SmtpHandover) and book is not None:
            handover.receipt = (
                book, delivery.email_id, delivery.attempt_number, delivery.envelope
            )  # fmt: skip
        return handover

    async def _transaction(
        self,
        connection: Connection,
        delivery: Delivery,
        content: bytes,
        options: list[bytes],
        encoding: str,
    ) -> Handover | Outcome:
        # The addresses are validated bare addresses: no aiosmtplib address parsing.
        mail = b" ".join((b"MAIL FROM:<" + delivery.sender.encode(encoding) + b">", *options))
        rcpts = [b"RCPT TO:<" + to.encode(encoding) + b">" for to in delivery.recipients]
        data: SMTPResponse | None
        if connection.pipelining:
            # The envelope and DATA in one write, their replies read together (RFC 2920).
            sender, *replies, data = await exchange(connection.protocol, [mail, *rcpts, b"DATA"])
        else:
            sender, replies, data = await self._one_at_a_time(connection.smtp, mail, rcpts)
        accepted: list[str] = []
        rejected: dict[str, str] = {}
        deferred: dict[str, str] = {}
        for recipient, response in zip(delivery.recipients, replies, strict=False):
            if response.code in (250, 251):
                accepted.append(recipient)
            else:
                target = rejected if response.code >= 500 else deferred
                target[recipient] = f"{response.code} {response.message}"
        outcome: Outcome | None = None
        if sender.code != 250:
            outcome = _refusal(sender, "MAIL FROM")
        elif deferred:
            # Retry the whole envelope later: nothing has been delivered to anyone yet
            # (the delivery worker gives every recipient an envelope of its own).
            outcome = TemporaryFailure(
                "RCPT TO deferred: " + "; ".join(_pairs(deferred)), recipients=tuple(deferred)
            )
        elif not accepted:
            outcome = PermanentFailure(
                "RCPT TO refused: " + "; ".join(_pairs(rejected)), tuple(rejected)
            )
        elif data is not None and data.code != 354:
            outcome = _refusal(data, "DATA")
        if outcome is None:
            return await self._handover(connection, content, accepted, rejected)
        if data is not None and data.code == 354:
            # A pipelined DATA the relay took though the transaction cannot go on: the
            # content must not follow, and closing the connection takes it back.
            self._release(connection, reusable=False)
        else:
            connection.needs_reset = True
            self._release(connection, reusable=True)
        return outcome

    @staticmethod
    async def _one_at_a_time(
        smtp: aiosmtplib.SMTP, mail: bytes, rcpts: list[bytes]
    ) -> tuple[SMTPResponse, list[SMTPResponse], SMTPResponse | None]:
        """The envelope and DATA a command at a time, as far as the replies allow:
        no DATA (``None``) after a refused sender, a deferred recipient or none taken."""
        sender = await smtp.execute_command(mail, timeout=None)
        if sender.code != 250:
            return sender, [], None
        replies = [await smtp.execute_command(rcpt, timeout=None) for rcpt in rcpts]
        codes = {reply.code for reply in replies}
        taken = codes & {250, 251}
        if not taken or any(code < 500 for code in codes - taken):  # none, or one deferred
            return sender, replies, None
        return sender, replies, await smtp.execute_command(b"DATA", timeout=None)

    async def _handover(
        self, connection: Connection, content: bytes, accepted: list[str], rejected: dict[str, str]
    ) -> SmtpHandover:
        protocol = connection.protocol
        held = b""
        if len(content) <= HELD_CONTENT:
            held = content  # goes out with the terminator: one write, not two
        else:
            protocol.write(content)
            await drained(protocol)
        # Arm the reader before the terminator can be written: aiosmtplib drops a reply
        # that arrives while no read is pending.
        reader = asyncio.ensure_future(protocol.read_response(timeout=None))
        await asyncio.sleep(0)
        return SmtpHandover(self, connection, reader, tuple(accepted), rejected, held)

    async def settle(self, delivery: Delivery) -> Outcome:
        filed = None
        if self.receipts is not None:
            filed = await asyncio.to_thread(
                receipt_filed,
                self.receipts,
                delivery.attempt,
                delivery.email_id,
                delivery.attempt_number,
                delivery.envelope,
            )
        if filed is False:
            return TemporaryFailure(
                "the runner stopped before the end of data was sent; the relay discarded "
                "the message",
                retry_now=True,
            )
        if filed is None:
            reply = "no receipt to go by: taken as handed to the relay, answer never read"
        else:
            reply = "the end of data was sent; the relay's answer was never read"
        return Accepted(reply=reply, confirmed=False)


async def _say_goodbye(connection: Connection) -> None:
    """QUIT (within ``QUIT_TIMEOUT``), then close whatever the relay answered."""
    try:
        with contextlib.suppress(*TRANSPORT_ERRORS):
            await asyncio.wait_for(connection.smtp.quit(), QUIT_TIMEOUT)
    finally:
        connection.smtp.close()


def _refusal(response: SMTPResponse, stage: str) -> Outcome:
    reason = f"{stage} refused: {response.code} {response.message}"
    return TemporaryFailure(reason) if response.code < 500 else PermanentFailure(reason)


def _pairs(addresses: dict[str, str]) -> list[str]:
    return [f"{address}: {reply}" for address, reply in addresses.items()]
