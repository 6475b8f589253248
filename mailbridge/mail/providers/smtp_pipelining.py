"""Command pipelining (RFC 2920) over an aiosmtplib connection.

aiosmtplib sends one command and waits for its reply before the next; with a relay that
advertises ``PIPELINING`` — Postfix, Exim, Gmail and Microsoft 365 do — ``MAIL FROM``,
every ``RCPT TO`` and ``DATA`` can go in one write and their replies be read together:
one round trip where there were three or more, and one send instead of one a command.
aiosmtplib's protocol reads one reply a command and drops what arrives while no command
waits (its documented limit), so for the exchange the transport hands its data to a
:class:`_GroupReplies` that collects every reply of the group in order; the connection
and everything else — events included, passed on — stay aiosmtplib's, which gets the
transport back as soon as the replies are in.
"""

from __future__ import annotations

import asyncio
import re
from typing import cast

from aiosmtplib import SMTPResponseException, SMTPServerDisconnected
from aiosmtplib.protocol import SMTPProtocol
from aiosmtplib.response import SMTPResponse

# aiosmtplib's limit on a reply line, and what it refuses in a command; a group's
# replies may hold up to 2 MiB unread (aiosmtplib allows 32 KiB a reply).
MAX_LINE_LENGTH = 8192
MAX_REPLIES_LENGTH = MAX_LINE_LENGTH * 4 * 64
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")


async def exchange(protocol: SMTPProtocol, commands: list[bytes]) -> list[SMTPResponse]:
    """Write ``commands`` in one piece and return their replies, in order.

    Each command is a line without its CRLF; one holding a control character is
    refused (``ValueError``), as aiosmtplib refuses it. The caller bounds the wait.
    """
    for command in commands:
        if _CONTROL.search(command):
            raise ValueError("Command arg contains a prohibited control character")
    transport = cast(asyncio.Transport | None, protocol.transport)
    if transport is None or transport.is_closing():
        raise SMTPServerDisconnected("Connection lost")
    replies = _GroupReplies(protocol, len(commands))
    transport.set_protocol(replies)
    try:
        transport.write(b"\r\n".join(commands) + b"\r\n")
        return await replies.done
    finally:
        if not transport.is_closing():
            transport.set_protocol(protocol)


class _GroupReplies(asyncio.Protocol):
    """Reads ``count`` replies for the protocol it stands in for; the transport's other
    events go on to that protocol (so a lost connection is aiosmtplib's to see)."""

    def __init__(self, protocol: SMTPProtocol, count: int) -> None:
        self._protocol = protocol
        self._count = count
        self._buffer = bytearray()
        self._replies: list[SMTPResponse] = []
        self.done: asyncio.Future[list[SMTPResponse]] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if self.done.done():
            return
        self._buffer += data
        try:
            while len(self._replies) < self._count:
                reply = self._take_reply()
                if reply is None:
                    break
                self._replies.append(reply)
        except SMTPResponseException as exc:
            self._fail(exc)
            return
        if len(self._replies) == self._count:
            self.done.set_result(self._replies)
        elif len(self._buffer) > MAX_REPLIES_LENGTH:
            self._fail(SMTPResponseException(-1, "Response too long"))

    def _take_reply(self) -> SMTPResponse | None:
        """The first whole reply in the buffer (taken out of it), if there is one."""
        lines: list[bytes] = []
        offset = 0
        code = -1
        while True:
            end = self._buffer.find(b"\n", offset)
            if end == -1:
                return None
            line = bytes(self._buffer[offset : end + 1])
            offset = end + 1
            if len(line) > MAX_LINE_LENGTH:
                raise SMTPResponseException(-1, "Response too long")
            if not line[:3].isdigit():
                text = line.decode("utf-8", "ignore")
                raise SMTPResponseException(-1, f"Malformed SMTP response line: {text}")
            code = int(line[:3])
            lines.append(line[4:].strip(b" \t\r\n"))
            if line[3:4] != b"-":
                break
        del self._buffer[:offset]
        return SMTPResponse(code, b"\n".join(lines).decode("utf-8", "surrogateescape"))

    def _fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)

    def eof_received(self) -> bool | None:
        self._fail(SMTPServerDisconnected("Unexpected EOF received"))
        return self._protocol.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        lost = SMTPServerDisconnected("Connection lost")
        lost.__cause__ = exc
        self._fail(lost)
        self._protocol.connection_lost(exc)

    def pause_writing(self) -> None:
        self._protocol.pause_writing()

    def resume_writing(self) -> None:
        self._protocol.resume_writing()
