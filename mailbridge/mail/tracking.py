"""Open and click tracking, and one-click unsubscribe links: pure functions.

The compose step calls :func:`rewrite_html` with the sending domain's switches
(``Domain.open_tracking``, ``Domain.click_tracking``) and puts
:func:`unsubscribe_url` in the ``List-Unsubscribe`` header of marketing mail
(RFC 8058). The public routes under ``/t/`` read the tokens back
(``api.routers.tracking``). Links are signed (``signed_links``), so a click link can
only ever redirect to the URL that was in the email: never an open redirect.

Routes: ``/t/o/<token>`` open pixel, ``/t/c/<token>`` click, ``/t/u/<token>``
unsubscribe; ``base_url`` is ``settings.public_url``.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from html.entities import html5
from html.parser import HTMLParser

from mailbridge.mail.signed_links import (
    LINK_PREFIX,
    VOTE_PATH,
    id_bytes,
    id_from_bytes,
    link,
    sign,
    verify,
)

OPEN, CLICK, UNSUBSCRIBE = "open", "click", "unsubscribe"
OPEN_PATH = LINK_PREFIX + "o/"
CLICK_PATH = LINK_PREFIX + "c/"
UNSUBSCRIBE_PATH = LINK_PREFIX + "u/"

# Cheap pre-checks: without a match the parser would find nothing to change.
_ANCHOR_OPEN = re.compile(r"<a", re.IGNORECASE)
_BODY_CLOSE = re.compile(r"</body", re.IGNORECASE)


@dataclass(frozen=True)
class Click:
    email_id: str
    url: str


def is_trackable(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def open_pixel_url(base_url: str, secret: bytes, email_id: str) -> str:
    return link(base_url, OPEN_PATH, sign(secret, OPEN, id_bytes(email_id)))


def click_url(base_url: str, secret: bytes, email_id: str, target: str) -> str:
    if not is_trackable(target):
        raise ValueError(f"only http(s) links are tracked, not {target!r}")
    return link(base_url, CLICK_PATH, sign(secret, CLICK, id_bytes(email_id) + target.encode()))


def unsubscribe_url(base_url: str, secret: bytes, email_id: str) -> str:
    return link(base_url, UNSUBSCRIBE_PATH, sign(secret, UNSUBSCRIBE, id_bytes(email_id)))


def read_open_token(secret: bytes, token: str) -> str | None:
    """The email id an open pixel token names; None if it is not one we signed."""
    payload = verify(secret, OPEN, token)
    return id_from_bytes(payload) if payload is not None and len(payload) == 16 else None


def read_unsubscribe_token(secret: bytes, token: str) -> str | None:
    payload = verify(secret, UNSUBSCRIBE, token)
    return id_from_bytes(payload) if payload is not None and len(payload) == 16 else None


def read_click_token(secret: bytes, token: str) -> Click | None:
    payload = verify(secret, CLICK, token)
    if payload is None or len(payload) <= 16:
        return None
    try:
        url = payload[16:].decode()
    except UnicodeDecodeError:
        return None
    return Click(id_from_bytes(payload), url) if is_trackable(url) else None


def rewrite_html(
    html: str,
    *,
    base_url: str,
    secret: bytes,
    email_id: str,
    open_tracking: bool,
    click_tracking: bool,
) -> str:
    """``html`` with its http(s) links sent through the click redirect and an open pixel.

    The standard library's parser finds the links and the end of the body, so nothing
    inside a comment, a script or a CDATA section is taken for one; the source is copied
    through as it is, with only the href values replaced and the pixel added. Links
    already pointing at our own signed routes (the unsubscribe link a template put in,
    a poll's vote links) stay as they are.
    """
    links = click_tracking and _ANCHOR_OPEN.search(html) is not None
    body = open_tracking and _BODY_CLOSE.search(html) is not None
    document = _Document(html) if links or body else None
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in the source
    if links and document is not None:
        own_links = tuple(base_url.rstrip("/") + path for path in (LINK_PREFIX, VOTE_PATH))
        for start, end, url in document.hrefs:
            if is_trackable(url) and not url.startswith(own_links):
                tracked = click_url(base_url, secret, email_id, url)
                edits.append((start, end, f'"{html_lib.escape(tracked, quote=True)}"'))
    if open_tracking:
        at = len(html)
        if document is not None and document.body_end is not None:
            at = document.body_end
        pixel = (
            f'<img src="{html_lib.escape(open_pixel_url(base_url, secret, email_id))}" '
            'width="1" height="1" alt="" '
            'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />'
        )
        edits.append((at, at, pixel))
    if not edits:
        return html
    edits.sort(key=lambda edit: edit[0])
    parts: list[str] = []
    copied = 0
    for start, end, replacement in edits:
        parts.extend((html[copied:start], replacement))
        copied = end
    parts.append(html[copied:])
    return "".join(parts)


# One attribute of a start tag, as ``html.parser`` reads it (its ``attrfind_tolerant``):
# name, then an optional value, quoted or bare. Used only to find where the value the
# parser reported stands in the source; ``_Document`` checks that both agree.
_TAG_NAME = re.compile(r"<[a-zA-Z][^\t\n\r\f />\x00]*(?:\s|/(?!>))*")
_ATTRIBUTE = re.compile(
    r"""((?<=['"\s/])[^\s/>][^\s/=>]*)(\s*=+\s*('[^']*'|"[^"]*"|(?!['"])[^>\s]*))?"""
    r"""(?:\s|/(?!>))*"""
)


class _Document(HTMLParser):
    """Where a document's ``<a href>`` values and its last ``</body>`` are, as source
    offsets: the parser reports a start tag's text and position, not its attributes'."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[tuple[int, int, str]] = []  # value span (quotes included), URL
        self.body_end: int | None = None
        self._line_starts = [0]
        self._line_starts.extend(match.end() for match in re.finditer("\n", html))
        self.feed(html)
        self.close()

    def _offset(self) -> int:
        line, column = self.getpos()
        return self._line_starts[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        # The first href counts, as in a browser.
        href = next((value for name, value in attrs if name == "href"), None)
        tag_text = self.get_starttag_text()
        if href is None or tag_text is None:
            return
        span = _href_value_span(tag_text)
        if span is None:
            return
        start, end = span
        raw = tag_text[start:end]
        if raw[:1] in ("'", '"'):
            raw = raw[1:-1]
        if html_lib.unescape(raw) != href:
            return  # the source does not read as the parser read it: leave it alone
        at = self._offset()
        self.hrefs.append((at + start, at + end, _attribute_value(raw).strip()))

    def handle_endtag(self, tag: str) -> None:
        if tag == "body":
            self.body_end = self._offset()


def _href_value_span(tag_text: str) -> tuple[int, int] | None:
    """Where the first href's value stands in ``tag_text`` (an ``<a ...>`` start tag)."""
    name = _TAG_NAME.match(tag_text)
    if name is None:
        return None
    at = name.end()
    while (attribute := _ATTRIBUTE.match(tag_text, at)) is not None and attribute.end() > at:
        if attribute.group(1).lower() == "href":
            return attribute.span(3) if attribute.group(2) else None
        at = attribute.end()
    return None


# html's own expression for a character reference (``html._charref``).
_REFERENCE = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")


def _attribute_value(raw: str) -> str:
    """``raw`` decoded as a browser decodes an attribute's value: as ``html.unescape``
    does, except that a named reference without its ";" followed by "=" or a letter or
    digit stays as it is (HTML's rule for attributes), so ``?a=1&region=eu`` keeps its
    ``&region`` where ``html.unescape`` (and so ``html.parser``) reads "®ion"."""
    return _REFERENCE.sub(_decoded_reference, raw) if "&" in raw else raw


def _decoded_reference(match: re.Match[str]) -> str:
    reference, name = match.group(0), match.group(1)
    if not name.startswith("#") and name not in html5:
        # the longest known prefix, as html.unescape looks for it
        for end in range(len(name) - 1, 1, -1):
            if name[:end] in html5:
                after = name[end]
                if after == "=" or (after.isascii() and after.isalnum()):
                    return reference
                break
    return html_lib.unescape(reference)
