"""Share links: ``POST /emails/:id/share`` (Resend's ``emails.share``), ``DELETE
/emails/:id/share`` (revoke them all), and the public page a link opens,
``GET /share/<token>`` (rules in ``services.email`` ``_shares``).

An id names a sent email of the team, else a received one; the page shows the email's
subject, sender, recipients and date, and its body framed by ``mail.framing``.
"""

from __future__ import annotations

import html
from typing import Annotated, Any

from fastapi import APIRouter, Body
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.api.deps import ContextDep, SessionDep, Writer
from mailbridge.clock import isoformat_ms
from mailbridge.errors import NotFound
from mailbridge.mail.framing import REMOTE_IMAGES, mail_document
from mailbridge.services import email as emails
from mailbridge.services import inbound
from mailbridge.storage.tables import Email, EmailShare, ReceivedEmail

router = APIRouter(tags=["emails"])
pages = APIRouter(tags=["emails"], include_in_schema=False)


class ShareOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    expires_in: str | None = Field(
        default=None, max_length=100, description="e.g. 10m, 2 hours, 1 day; at most 48h"
    )


async def _shared(
    session: AsyncSession, team_id: str, email_id: str
) -> tuple[str, Email | ReceivedEmail]:
    """The team's email by id: ("sent", row) or ("received", row); 404 otherwise."""
    try:
        return "sent", await emails.owned_email(session, team_id, email_id)
    except NotFound:
        pass
    try:
        return "received", await inbound.get_received(session, team_id, email_id)
    except NotFound:
        raise NotFound("Email not found.") from None


@router.post("/emails/{email_id}/share", status_code=201)
async def share_email(
    email_id: str,
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
    options: Annotated[ShareOptions | None, Body()] = None,
) -> dict[str, Any]:
    """A public link to the email as it reads, until ``expires_in`` (default 48 hours)."""
    lifetime = emails.share_lifetime((options or ShareOptions()).expires_in)
    source, row = await _shared(session, principal.team_id, email_id)
    made = await emails.create_share(
        session, context.clock, context.settings.public_url, principal.team_id, row.id,
        source, lifetime,
    )  # fmt: skip
    return emails.share_view(made)


@router.delete("/emails/{email_id}/share")
async def revoke_email_shares(
    email_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """End every live link to the email at once."""
    _source, row = await _shared(session, principal.team_id, email_id)
    revoked = await emails.revoke_shares(session, context.clock, principal.team_id, row.id)
    return {"object": "email", "id": row.id, "revoked": revoked}


def _policy(images: bool) -> str:
    image_sources = "data:" + (f" {REMOTE_IMAGES}" if images else "")
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src {image_sources}; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def _page(title: str, body: str, *, images: bool = False, status_code: int = 200) -> HTMLResponse:
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="robots" content="noindex"><meta name="viewport" '
        'content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title></head>"
        '<body style="font-family:sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem">'
        f"{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status_code, headers={
        "Content-Security-Policy": _policy(images),
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "X-Robots-Tag": "noindex",
        "Cache-Control": "no-store",
    })  # fmt: skip


def _row(label: str, value: str) -> str:
    return (
        f'<tr><th style="text-align:left;padding-right:1rem;color:#555">{label}</th>'
        f"<td>{html.escape(value)}</td></tr>"
    )


def _shown(share: EmailShare, row: Email | ReceivedEmail) -> HTMLResponse:
    sender = row.from_address or ""
    recipients = ", ".join(row.to or [])
    copies = ", ".join(row.cc or [])
    when = isoformat_ms(row.created_at) or ""
    rows = [_row("From", sender), _row("To", recipients)]
    if copies:
        rows.append(_row("Cc", copies))
    rows.append(_row("Date", when))
    subject = row.subject or "(no subject)"
    if row.html:
        framed = html.escape(mail_document(row.html, images=share.source == "sent"), quote=True)
        content = (
            f'<iframe sandbox srcdoc="{framed}" title="The email" '
            'style="width:100%;height:70vh;border:1px solid #ddd"></iframe>'
        )
    else:
        text = html.escape(row.text or "")
        content = f'<pre style="white-space:pre-wrap;font:inherit">{text}</pre>'
    body = (
        f'<h1 style="font-size:1.3rem">{html.escape(subject)}</h1>'
        f'<table style="margin-bottom:1rem">{"".join(rows)}</table>{content}'
        f'<p style="color:#777;font-size:.85rem">Shared until '
        f"{html.escape(isoformat_ms(share.expires_at) or '')}.</p>"
    )
    return _page(subject, body, images=share.source == "sent")


@pages.get("/share/{token}")
async def shared_email_page(token: str, session: SessionDep, context: ContextDep) -> HTMLResponse:
    share = await emails.open_share(session, context.clock.now(), token)
    row: Email | ReceivedEmail | None = None
    if share is not None:
        table = Email if share.source == "sent" else ReceivedEmail
        row = await session.get(table, share.email_id)
    if share is None or row is None:
        gone = "<p>This link has expired, was revoked, or never existed.</p>"
        return _page("Link not available", gone, status_code=404)
    return _shown(share, row)
