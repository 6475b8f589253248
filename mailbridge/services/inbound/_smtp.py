"""The listener's SMTP conversation: aiosmtpd's, with DATA read so that a refusal names
its real cause.

aiosmtpd reads DATA in CRLF-ended lines and answers ``500 Line too long`` to any line
over 1,001 octets — also to a message whose lines end in a bare LF, all of which is
then one "line". Here DATA is read in pieces (``DataReader``), and:

- only ``<CRLF>.<CRLF>`` ends it: a dot line after a bare LF (``<LF>.<LF>``,
  ``<LF>.<CRLF>``) is data, never the end of one message and the start of another (the
  SMTP smuggling advisories, CVE-2023-51764/51765/51766);
- a bare LF line end is refused, ``550 5.5.2`` (RFC 5321 §2.3.8: CR and LF only as
  CRLF) — what qmail always did and Postfix does by default since 3.9
  (``smtpd_forbid_bare_newline``). Accepting it, as older Postfix did, is what made
  smuggling through a lenient receiver work; a sender still writing bare LFs hears why;
- a line over 1,000 octets with its CRLF (RFC 5321 §4.5.3.1.6; 1,001 on the wire, where
  a transparency dot may come first) is refused ``500 5.5.2``; more than the size limit
  ``552 5.3.4``.

Refusals come after the whole message has been read (RFC 5321 §4.2.5), none of it kept.
"""

from __future__ import annotations

import asyncio

from aiosmtpd.smtp import MISSING, SMTP, syntax

MAX_LINE = 1001  # octets on the wire: 1,000 with the CRLF, and a transparency dot
BARE_LF = "550 5.5.2 Bare LF: a line ended in LF alone; lines end in CRLF (RFC 5321 2.3.8)"
LINE_TOO_LONG = "500 5.5.2 Line too long: over 1000 octets with its CRLF (RFC 5321 4.5.3.1.6)"
TOO_MUCH = "552 5.3.4 Message too big for this server"
_CRLF = b"\r\n"
_END = b".\r\n"  # the end of the data when a CRLF is before it


class DataReader:
    """DATA as the stream reader hands it over: pieces up to and including each ".<CRLF>",
    or, between them, as much as can be taken without splitting one. Every check is a
    bytes method over a whole piece (in C); a line at a time in Python costs the event
    loop long stretches when many long messages arrive at once."""

    def __init__(self, size_limit: int | None) -> None:
        self.size_limit = size_limit
        self.size = 0
        self.bare_lf = self.too_long = self.too_much = False
        self._kept: list[bytes] = []
        self._tail = b"\r\n"  # the last two octets taken: the DATA command's line end at first
        self._line = 0  # octets of the line being read, so far

    @property
    def refusal(self) -> str | None:
        if self.bare_lf:
            return BARE_LF
        if self.too_long:
            return LINE_TOO_LONG
        return TOO_MUCH if self.too_much else None

    def take(self, piece: bytes) -> bool:
        """Take a piece; True when it ends the data (its ".<CRLF>" has a CRLF before it)."""
        ended = (piece if len(piece) >= 5 else self._tail + piece)[-5:] == _CRLF + _END
        if ended:
            piece = piece[: -len(_END)]
        self.size += len(piece)
        if self.size_limit and self.size > self.size_limit:
            self.too_much = True
        if not (  # one whole line: the common case, nothing more to check
            self._line == 0
            and piece.endswith(_CRLF)
            and piece.count(b"\n") == 1
            and len(piece) <= MAX_LINE
        ):
            self._check(piece)
        if self.bare_lf or self.too_long or self.too_much:
            self._kept.clear()  # none of it is kept any more
        else:
            self._kept.append(self._unstuffed(piece))
        self._tail = piece[-2:] if len(piece) >= 2 else (self._tail + piece)[-2:]
        return ended

    def _check(self, piece: bytes) -> None:
        line_ends = piece.count(b"\n")
        crlfs = piece.count(_CRLF) + (self._tail.endswith(b"\r") and piece.startswith(b"\n"))
        if line_ends > crlfs:
            self.bare_lf = True
        if not line_ends:
            self._line += len(piece)
        else:
            lines = piece.split(b"\n")
            longest = max(self._line + len(lines[0]), max(map(len, lines[1:-1]), default=0))
            self.too_long = self.too_long or longest + 1 > MAX_LINE
            self._line = len(lines[-1])
        self.too_long = self.too_long or self._line > MAX_LINE

    def _unstuffed(self, piece: bytes) -> bytes:
        """Without the transparency dot of each line that starts with one (RFC 5321 §4.5.2),
        also when the line's start is in the piece before."""
        if piece.startswith(b".") and self._tail == _CRLF:
            piece = piece[1:]
        elif piece.startswith(b"\n.") and self._tail.endswith(b"\r"):
            piece = b"\n" + piece[2:]
        return piece.replace(b"\r\n.", _CRLF) if b"\r\n." in piece else piece

    def content(self) -> bytes:
        return b"".join(self._kept)


class InboundSMTP(SMTP):
    """aiosmtpd's SMTP server; DATA read by :class:`DataReader` (``decode_data`` is not
    supported: the content is the bytes)."""

    @syntax("DATA")
    async def smtp_DATA(self, arg: str) -> None:
        if await self.check_helo_needed() or await self.check_auth_needed("DATA"):
            return
        assert self.envelope is not None
        if not self.envelope.rcpt_tos:
            await self.push("503 Error: need RCPT command")
            return
        if arg:
            await self.push("501 Syntax: DATA")
            return
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        data = DataReader(self.data_size_limit)
        while True:
            try:
                piece = await self._reader.readuntil(_END)
            except asyncio.LimitOverrunError as overrun:  # no end in the buffer: what is safe
                piece = await self._reader.read(overrun.consumed)
            except asyncio.IncompleteReadError:  # the connection closed mid-message
                return
            except asyncio.CancelledError:  # the connection was lost
                self._writer.close()
                raise
            if data.take(piece):
                break
        if data.refusal is not None:
            await self.push(data.refusal)
            self._set_post_data_state()  # type: ignore[no-untyped-call]
            return
        self.envelope.content = self.envelope.original_content = data.content()
        status = await self._call_handler_hook("DATA")
        self._set_post_data_state()  # type: ignore[no-untyped-call]
        await self.push("250 OK" if status is MISSING else status)
