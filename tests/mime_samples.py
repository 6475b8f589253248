"""MIME shapes for the inbound tests and ``bench.inbound_hostile``: a forwarded message, and
messages built to hurt a parser — nesting far deeper than any mail, parts by the
thousand, a body every line of which meets a hundred boundaries. CRLF line ends
throughout, as SMTP carries them."""

from __future__ import annotations


def headers(subject: str = "A question", sender: str = "Ann <ann@corp.io>") -> bytes:
    return (
        f"From: {sender}\r\nTo: hello@shop.io\r\nSubject: {subject}\r\n"
        f"Message-ID: <{subject.replace(' ', '.')}@corp.io>\r\nMIME-Version: 1.0\r\n"
    ).encode()


def nested(depth: int, subject: str = "deep", body: bytes = b"bottom\r\n") -> bytes:
    """``depth`` multiparts one inside the other (each a new boundary, none closed: the
    cheapest bytes per level), a text part at the bottom, ``depth`` levels down. 2,000
    levels are ~100 KB; the standard library spends over a second on them and fails."""
    levels = b"".join(
        b"Content-Type: multipart/mixed; boundary=%x\r\n\r\n--%x\r\n" % (level, level)
        for level in range(depth)
    )
    return headers(subject) + levels + b"Content-Type: text/plain\r\n\r\n" + body


def nested_messages(depth: int, subject: str = "deep") -> bytes:
    """``depth`` message/rfc822 parts one inside the other (~30 bytes a level)."""
    return (
        headers(subject)
        + b"Content-Type: message/rfc822\r\n\r\n" * depth
        + b"Content-Type: text/plain\r\n\r\nbottom\r\n"
    )


def many_parts(count: int, subject: str = "parts") -> bytes:
    """A multipart/mixed of ``count`` small attachments."""
    parts = b"".join(
        b"--p\r\nContent-Type: text/plain\r\n"
        b"Content-Disposition: attachment; filename=part%d.txt\r\n\r\npart %d\r\n" % (n, n)
        for n in range(count)
    )
    return (
        headers(subject)
        + b"Content-Type: multipart/mixed; boundary=p\r\n\r\n"
        + parts
        + b"--p--\r\n"
    )


def slow(subject: str = "slow", lines: int = 200_000) -> bytes:
    """Within the limits (99 levels) yet slow: every line of the body at the bottom is
    checked against each enclosing boundary, ~18 us a line (~4 s for 200,000)."""
    return nested(99, subject, b"a\r\n" * lines)


INNER = (
    b'From: Bob <bob@corp.io>\r\nTo: ann@corp.io\r\nSubject: Quote: Q3/Q4 "final" <v2>?\r\n'
    b'Content-Type: multipart/alternative; boundary="in"\r\n\r\n'
    b"--in\r\nContent-Type: text/plain\r\n\r\ninner words\r\n"
    b"--in\r\nContent-Type: text/html\r\n\r\n<p>inner words</p>\r\n"
    b"--in\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; "
    b"filename=inner.pdf\r\n\r\n%PDF-1.4\r\n--in--\r\n"
)


def forwarded(inner: bytes = INNER, part_headers: bytes = b"", closed: bool = True) -> bytes:
    """Outer words, then ``inner`` as a message/rfc822 part (with ``part_headers``)."""
    return (
        headers("Fwd: the quote")
        + b'Content-Type: multipart/mixed; boundary="out"\r\n\r\n'
        + b"--out\r\nContent-Type: text/plain\r\n\r\nouter words\r\n"
        + b"--out\r\nContent-Type: message/rfc822\r\n"
        + part_headers
        + b"\r\n"
        + inner
        + (b"\r\n--out--\r\n" if closed else b"")
    )
