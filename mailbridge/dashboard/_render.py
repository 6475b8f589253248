"""Pages from Jinja2 templates (Starlette's ``Jinja2Templates``), with what every page
shows: the signed-in member, the navigation, a one-line message."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import HTMLResponse

from mailbridge.dashboard._session import SignedIn

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
    ("/dashboard/logs", "Logs"),
    ("/dashboard/api-keys", "API keys"),
    ("/dashboard/members", "Members"),
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


TEMPLATES.env.filters["when"] = when
TEMPLATES.env.tests["instant"] = is_instant
TEMPLATES.env.filters["percent"] = percent


def page(
    request: Request,
    view: str,
    me: SignedIn | None,
    *,
    status_code: int = 200,
    active: str | None = None,
    **values: Any,
) -> HTMLResponse:
    context = {"me": me, "nav": NAV, "active": active, **values}
    response = TEMPLATES.TemplateResponse(request, view, context, status_code=status_code)
    response.headers["cache-control"] = "no-store"
    response.headers["x-frame-options"] = "DENY"
    response.headers["referrer-policy"] = "same-origin"
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
