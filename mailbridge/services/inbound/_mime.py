"""A received message's MIME tree, read within bounds (DESIGN §9: SMTP in is the whole
internet).

The standard library's feed parser recurses once per nesting level and checks every
line against every enclosing boundary: a message 2,000 levels deep costs it seconds of
quadratic work and ends in ``RecursionError``. :func:`read_tree` drives that same parser
with two limits enforced as each part begins — ``MAX_DEPTH`` levels of nesting and
``MAX_PARTS`` parts — so a hostile message stops early, with the tree read so far and
why (``Tree.stopped``). It also notes where each part lies in the raw bytes, so that an
attached message (``message/rfc822``) is kept exactly as it was sent.

:func:`cheap_to_parse` says, from a linear scan of the raw bytes, whether parsing them
is cheap enough for the event loop (``_parse_worker`` sends anything else to a worker
process). :func:`header_block` reads the top-level header block alone, cheaply: what is
left to say about a message whose parse did not finish.
"""

from __future__ import annotations

import binascii
import quopri
import re
from dataclasses import dataclass, field
from email import feedparser
from email.feedparser import FeedParser
from email.message import Message
from email.parser import HeaderParser
from typing import TYPE_CHECKING, Any

MAX_DEPTH = 100  # MIME levels below the message; real mail uses a handful
MAX_PARTS = 1000  # parts (header blocks) in one message; real mail has a few dozen at most
TOO_DEEP = "nesting too deep"
TOO_MANY_PARTS = f"too many parts (over {MAX_PARTS:,})"

# What the event loop parses itself (a process hop would cost more): a brief hold on a
# core at most for the worst message within these, measured — flufl.bounce's detectors,
# which any subject can call in, cost by the line and by the byte — and far less for an
# ordinary message.
INLINE_BYTES = 16 * 1024
INLINE_CONTAINERS = 8  # multipart or message/* Content-Types, anywhere in the bytes
INLINE_DELIMITERS = 32  # lines starting "--": boundaries, and signatures' "-- "
INLINE_WORK = 1_000  # line ends x (1 + containers): each line meets each boundary
HEADER_BLOCK_BYTES = 256 * 1024  # of a message whose parse did not finish

_CHUNK = 64 * 1024
_BLANK_LINE = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")

# Defects that say the structure did not parse as written, and how a person reads them.
_STRUCTURAL_DEFECTS = {
    "StartBoundaryNotFoundDefect": "the multipart boundary never occurs",
    "CloseBoundaryNotFoundDefect": "the multipart's closing boundary is missing",
    "NoBoundaryInMultipartDefect": "a multipart without a boundary",
    "MultipartInvariantViolationDefect": "a multipart without parts",
}


def cheap_to_parse(raw: bytes) -> bool:
    """Whether parsing ``raw`` is cheap enough for the event loop, from upper bounds a
    linear scan gives (bytes methods, in C; a big message is not even scanned). Every
    line is checked against each enclosing boundary, and every nesting level needs a
    Content-Type naming a multipart or message/* type (a multipart/digest's parts are
    messages by default: two levels each at most); every part needs a line starting with
    "--" (in a delivery status, a blank line)."""
    if len(raw) > INLINE_BYTES:
        return False
    line_ends = raw.count(b"\n") + raw.count(b"\r")
    lowered = raw.lower()
    containers = lowered.count(b"multipart/") + lowered.count(b"message/")
    return (
        containers <= INLINE_CONTAINERS
        and line_ends * (1 + containers) <= INLINE_WORK
        and raw.count(b"\n--") + raw.startswith(b"--") <= INLINE_DELIMITERS
        and not (b"delivery-status" in lowered and line_ends > 4 * INLINE_DELIMITERS)
    )


class _Stopped(Exception):
    """Parsing stopped at a limit (the reason is the message)."""


_BufferedSubFile: Any = feedparser.BufferedSubFile  # type: ignore[attr-defined]


class _TrackedInput(_BufferedSubFile):  # type: ignore[misc]
    """The feed parser's line buffer, counting the characters it hands out: bytes are
    decoded one character each (ASCII, surrogateescape), so that is the byte offset."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0

    def readline(self) -> Any:
        line = super().readline()
        if line.__class__ is str:
            self.offset += len(line)
        return line

    def unreadline(self, line: str) -> None:
        super().unreadline(line)
        self.offset -= len(line)


if TYPE_CHECKING:
    _FeedParser = FeedParser[Message]
else:  # not subscriptable at run time
    _FeedParser = FeedParser


class _BoundedParser(_FeedParser):
    """The standard feed parser (compat32), stopped at ``MAX_DEPTH`` or ``MAX_PARTS``.
    Overrides two of its private steps, stable since Python 3.3: ``_new_message`` (a part
    begins) and ``_pop_message`` (a part ends)."""

    _msgstack: list[Message]
    _cur: Message | None

    def __init__(self, *, tracked: bool) -> None:
        super().__init__()
        if tracked:  # a line at a time costs a Python call more: only when it serves
            self._input = _TrackedInput()
        self.parts = 0
        self.spans: dict[int, tuple[int, int]] = {}  # id(part): (start, end) offsets
        self._starts: list[int] = []

    def _new_message(self) -> None:
        if len(self._msgstack) > MAX_DEPTH:
            raise _Stopped(TOO_DEEP)
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise _Stopped(TOO_MANY_PARTS)
        FeedParser._new_message(self)  # type: ignore[attr-defined]
        self._starts.append(getattr(self._input, "offset", 0))

    def _pop_message(self) -> Message:
        message: Message = FeedParser._pop_message(self)  # type: ignore[attr-defined]
        self.spans[id(message)] = (self._starts.pop(), getattr(self._input, "offset", 0))
        return message

    def unfinished(self) -> Message:
        """The root of what was read when parsing stopped, each open part closed."""
        for part in self._msgstack:
            if part.get_payload() is None:
                part.set_payload("")
        return self._msgstack[0]


@dataclass
class Tree:
    """A parsed message: its root, why parsing stopped early (else None), and where its
    parts lie in ``raw``."""

    raw: bytes
    root: Message
    stopped: str | None = None
    spans: dict[int, tuple[int, int]] | None = field(default=None, repr=False)  # if tracked

    def defects(self) -> list[str]:
        """The structural defects found, each as ``Name: what it means``, once each."""
        found: dict[str, None] = {}
        for part in _walk(self.root):
            for defect in part.defects:
                name = type(defect).__name__
                if name in _STRUCTURAL_DEFECTS:
                    found.setdefault(f"{name}: {_STRUCTURAL_DEFECTS[name]}", None)
        return list(found)

    def body_bytes(self, part: Message) -> bytes | None:
        """The body of a ``message/*`` part as it was sent (its transfer encoding, if a
        sender used one it should not have, undone); None when it is not known."""
        inner = part.get_payload()
        spans = self.spans or {}
        if not isinstance(inner, list) or not inner or id(inner[0]) not in spans:
            return None
        if id(part) not in spans:  # still open when parsing stopped
            return None
        start, end = spans[id(inner[0])][0], spans[id(part)][1]
        data = self.raw[start:end]
        if end < len(self.raw):  # a boundary follows: the last line end is the boundary's
            data = data.removesuffix(b"\n")
            data = data.removesuffix(b"\r")
        encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
        try:
            if encoding == "base64":
                return binascii.a2b_base64(data)
            if encoding == "quoted-printable":
                return quopri.decodestring(data)
        except (binascii.Error, ValueError):
            pass
        return data


def _walk(message: Message) -> list[Message]:
    """The message and all its parts, depth first (iteratively: no recursion limit)."""
    found, pending = [], [message]
    while pending:
        part = pending.pop()
        found.append(part)
        payload = part.get_payload()
        if isinstance(payload, list):
            pending.extend(reversed([p for p in payload if isinstance(p, Message)]))
    return found


def read_tree(raw: bytes) -> Tree:
    """``raw``'s MIME tree (the parser's ``compat32`` policy), bounded. Raises only what the
    standard library's parser raises on input it cannot read at all."""
    lowered = raw.lower()  # parts' places are needed for attached messages only
    tracked = b"message/" in lowered or b"/digest" in lowered
    parser = _BoundedParser(tracked=tracked)
    spans = parser.spans if tracked else None
    text = raw.decode("ascii", "surrogateescape")
    try:
        for start in range(0, len(text), _CHUNK):
            parser.feed(text[start : start + _CHUNK])
        root = parser.close()
    except _Stopped as stop:
        return Tree(raw, parser.unfinished(), str(stop), spans)
    return Tree(raw, root, None, spans)


def header_block(raw: bytes) -> Message:
    """The top-level header block alone (at most ``HEADER_BLOCK_BYTES`` of it), without
    reading the body: linear, whatever the body holds."""
    head = raw[:HEADER_BLOCK_BYTES]
    end = _BLANK_LINE.search(head)
    if end is not None:
        head = head[: end.end()]
    return HeaderParser().parsestr(head.decode("ascii", "surrogateescape"), headersonly=True)
