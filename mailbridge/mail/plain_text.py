"""A plain-text alternative for mail given only as HTML (issue 5 of 6): spam filters score
a lone ``text/html`` part (SpamAssassin's MIME_HTML_ONLY), and campaign tools make the
text part by default.

``html2text`` (maintained, pure Python) reads the HTML; its Markdown touches are turned
off — no emphasis marks, no images, no line wrapping — and a link reads ``text (url)``,
or the bare URL when its text is the URL itself. It is given the HTML as the caller
wrote it, before tracking rewrites the links, so the text carries the real addresses.
"""

from __future__ import annotations

import re

import html2text

# [text](url) or [text](url "title"), as html2text writes an inline link.
_LINK = re.compile(r"\[([^\]\n]*)\]\((\S+?)(?: \"[^\"\n]*\")?\)")
# <url>: html2text's automatic link, where the text was the URL.
_AUTOMATIC = re.compile(r"<((?:https?|mailto|tel):[^>\s]+)>")


def _link(match: re.Match[str]) -> str:
    text, url = match.group(1).strip(), match.group(2)
    shown = url.removeprefix("mailto:")
    if not text or text in (url, shown):
        return shown
    return f"{text} ({shown})"


def html_to_text(html: str) -> str:
    """The text a reader of ``html`` would see, links as ``text (url)``."""
    reader = html2text.HTML2Text()
    reader.body_width = 0  # the composer folds lines where it must
    reader.ignore_images = True
    reader.ignore_emphasis = True
    reader.ignore_tables = False
    reader.unicode_snob = True  # keep é, not e
    text = reader.handle(html)
    text = _AUTOMATIC.sub(lambda match: match.group(1).removeprefix("mailto:"), text)
    text = _LINK.sub(_link, text)
    return text.strip() + "\n"
