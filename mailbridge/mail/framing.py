"""Mail shown in a browser: as the document of a sandboxed ``srcdoc`` frame.

A ``srcdoc`` frame with the ``sandbox`` attribute (and no ``allow-scripts``) runs no
script and has an opaque origin; it inherits its page's Content-Security-Policy and
adds its own, which :func:`mail_document` puts first: nothing loads but the mail's
inline styles and ``data:`` images — and remote images only when asked, since loading
them tells their server when and from where the mail is read. The dashboard's mail
views and the public page of a shared email (``/share/<token>``) frame mail this way.
"""

from __future__ import annotations

import re

DOCTYPE = re.compile(r"\s*<!doctype[^>]*>", re.IGNORECASE)
REMOTE_IMAGES = "https: http:"


def mail_document(html: str, images: bool) -> str:
    """``html`` as the document of a sandboxed ``srcdoc`` frame: a policy of its own
    first (after a doctype, which keeps its rendering mode), loading nothing but inline
    styles and ``data:`` images, and remote images only when ``images``."""
    policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    if images:
        policy += f" {REMOTE_IMAGES}"
    head = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    doctype = DOCTYPE.match(html)
    at = doctype.end() if doctype else 0
    return html[:at] + head + html[at:]
