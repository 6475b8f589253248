"""Pages from Jinja2 templates (Starlette's ``Jinja2Templates``), with what every page
shows: the signed-in member, the navigation, a one-line message; and the
Content-Security-Policy each page is sent with.

The dashboard runs only its own script (DESIGN §9): no template has inline script, an
event handler or an inline style, and the policy (the package's ``HEADERS``, on every
response under ``/dashboard``) refuses them. Mail is shown in a sandboxed ``srcdoc``
frame, where no script runs; such a frame inherits its page's policy, so a page that
shows mail allows inline styles (the mail's own) and the images the mail may load,
while the frame's document carries a policy of its own that allows nothing else
(:func:`mail_document`). Received mail loads no remote image until a member asks.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import HTMLResponse

from mailbridge.dashboard._session import SignedIn
from mailbridge.mail.framing import REMOTE_IMAGES, mail_document

HERE = Path(__file__).parent
INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
TEMPLATES = Jinja2Templates(directory=HERE / "templates")

NAV = (
    ("/dashboard", "Overview"),
    ("/dashboard/emails", "Emails"),
    ("/dashboard/domains", "Domains"),
    ("/dashboard/audiences", "Audiences"),
    ("/dashboard/segments", "Segments"),
    ("/dashboard/templates", "Templates"),
    ("/dashboard/campaigns", "Campaigns"),
    ("/dashboard/automations", "Automations"),
    ("/dashboard/polls", "Polls"),
    ("/dashboard/webhooks", "Webhooks"),
    ("/dashboard/received", "Received"),
    ("/dashboard/inboxes", "Inboxes"),
    ("/dashboard/logs", "Logs"),
    ("/dashboard/api-keys", "API keys"),
    ("/dashboard/members", "Members"),
    ("/dashboard/account", "Your account"),
)


def when(value: Any) -> str:
    """An ISO 8601 instant as ``2026-11-25 14:03:09 UTC``; anything else as is."""
    if not value:
        return "—"
    try:
        instant = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return instant.strftime("%Y-%m-%d %H:%M:%S UTC")


def percent(value: Any) -> str:
    return "—" if value is None else f"{float(value) * 100:.2f} %"


def is_instant(value: Any) -> bool:
    return isinstance(value, str) and INSTANT.match(value) is not None


POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}
# Pages that show mail in a frame, and whether its remote images load by default: the
# team's own mail and templates do; received mail does not (its sender would learn
# when and from where it is read), until the member asks (``images``).
MAIL_VIEWS = {"email.html": True, "template.html": True, "received.html": False}


def content_security_policy(*, mail: bool = False, images: bool = False) -> str:
    """The page's policy: the strict one, or with what its mail frame needs."""
    directives = dict(POLICY)
    if mail:
        directives["style-src"] += " 'unsafe-inline'"
        directives["img-src"] += " data:" + (f" {REMOTE_IMAGES}" if images else "")
    return "; ".join(f"{name} {sources}" for name, sources in directives.items())


TEMPLATES.env.filters["when"] = when
TEMPLATES.env.filters["mail_document"] = mail_document
TEMPLATES.env.tests["instant"] = is_instant
TEMPLATES.env.filters["percent"] = percent


def page(
    request: Request,
    view: str,
    me: SignedIn | None,
    *,
    status_code: int = 200,
    active: str | None = None,
    images: bool | None = None,
    **values: Any,
) -> HTMLResponse:
    """``view`` rendered; ``images``: whether the mail it shows loads remote images
    (by default as ``MAIL_VIEWS`` says)."""
    mail = view in MAIL_VIEWS
    images = MAIL_VIEWS.get(view, False) if images is None else images
    context = {"me": me, "nav": NAV, "active": active, "images": images, **values}
    response = TEMPLATES.TemplateResponse(request, view, context, status_code=status_code)
    response.headers["cache-control"] = "no-store"
    response.headers["content-security-policy"] = content_security_policy(mail=mail, images=images)
    return response


def message(
    request: Request,
    me: SignedIn | None,
    title: str,
    text: str,
    *,
    status_code: int,
    name: str | None = None,
    back: str | None = None,
) -> HTMLResponse:
    return page(
        request, "message.html", me, status_code=status_code, title=title, message=text,
        name=name, back=back,
    )  # fmt: skip
