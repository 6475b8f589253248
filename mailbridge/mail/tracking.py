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
from collections.abc import Callable
from dataclasses import dataclass

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

# A comment (left alone, with any <a> inside it) or an <a ...> start tag whose quoted
# attribute values may hold ">".
_COMMENT_OR_ANCHOR = re.compile(
    r"<!--.*?-->|<a(?=[\s>/])(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE | re.DOTALL
)
# One attribute of a start tag; quoted values are consumed whole, so an "href=" inside
# another attribute's value is never taken for the real one.
_ATTRIBUTE = re.compile(
    r"""(?P<name>[^\s"'>/=]+)(?:\s*=\s*(?P<value>"[^"]*"|'[^']*'|[^\s"'>]+))?"""
)
_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)


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

    Links already pointing at our own signed routes (the unsubscribe link a template
    put in, a poll's vote links) stay as they are.
    """
    if click_tracking:
        own_links = tuple(base_url.rstrip("/") + path for path in (LINK_PREFIX, VOTE_PATH))

        def tracked_anchor(match: re.Match[str]) -> str:
            tag = match.group(0)
            if tag.startswith("<!--"):
                return tag
            return _rewrite_href(tag, track)

        def track(url: str) -> str:
            if not is_trackable(url) or url.startswith(own_links):
                return url
            return click_url(base_url, secret, email_id, url)

        html = _COMMENT_OR_ANCHOR.sub(tracked_anchor, html)
    if open_tracking:
        pixel = (
            f'<img src="{html_lib.escape(open_pixel_url(base_url, secret, email_id))}" '
            'width="1" height="1" alt="" '
            'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />'
        )
        ends = list(_BODY_END.finditer(html))
        if ends:
            at = ends[-1].start()
            html = html[:at] + pixel + html[at:]
        else:
            html += pixel
    return html


def _rewrite_href(tag: str, rewrite: Callable[[str], str]) -> str:
    """``tag`` (an ``<a ...>`` start tag) with its href value passed through ``rewrite``."""
    for attribute in _ATTRIBUTE.finditer(tag, 2):
        if attribute.group("name").lower() != "href" or attribute.group("value") is None:
            continue
        raw = attribute.group("value")
        quoted = raw[:1] in ("'", '"')
        url = html_lib.unescape(raw[1:-1] if quoted else raw).strip()
        new_url = rewrite(url)
        if new_url == url:
            return tag
        start, end = attribute.span("value")
        return f'{tag[:start]}"{html_lib.escape(new_url, quote=True)}"{tag[end:]}'
    return tag
