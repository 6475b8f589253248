"""The public routes under ``/t/``: what recipients' mail clients and browsers reach.

No key and no User-Agent are asked for (the middleware lets ``/t/`` through); the
signature of the token in the path is the only authority (``mail.signed_links``).

- ``GET /t/o/<token>``: the open pixel, always a 1x1 GIF (even for a bad token, so a
  mail client never shows a broken image); an open is recorded for a valid token.
- ``GET /t/c/<token>``: 302 to the link that was in the email, recording the click.
  A token we did not sign is 404 ``not_found``: never a redirect elsewhere.
- ``GET /t/u/<token>``: a page whose button POSTs to the same URL;
  ``POST /t/u/<token>``: the one-click unsubscribe of RFC 8058 (the body
  ``List-Unsubscribe=One-Click`` is what mail clients send; the token decides).
- ``GET /t/a/<token>``: an attachment's bytes, while its download link is valid.
"""

from __future__ import annotations

import base64
import logging
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.exc import SQLAlchemyError

from mailbridge.api.deps import ContextDep, SessionDep
from mailbridge.errors import NotFound
from mailbridge.mail import tracking
from mailbridge.mail.signed_links import read_download_token
from mailbridge.services import email as emails
from mailbridge.services.kernel import instance_secret

logger = logging.getLogger(__name__)

router = APIRouter(tags=["tracking"], include_in_schema=False)

# The smallest transparent GIF (43 bytes).
PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")
# Every open should reach us, not a cache on the way.
NO_CACHE = {"Cache-Control": "no-store, no-cache, must-revalidate, private", "Pragma": "no-cache"}

UNSUBSCRIBE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unsubscribe</title></head>
<body style="font-family:sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">
<h1>Unsubscribe</h1>
<p>Stop receiving these emails?</p>
<form method="post" action="">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button>
</form>
</body></html>
"""
UNSUBSCRIBED_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>Unsubscribed</title></head>
<body style="font-family:sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">
<h1>You are unsubscribed</h1>
<p>You will no longer receive these emails.</p>
</body></html>
"""


@router.get("/t/o/{token}")
async def open_pixel(token: str, session: SessionDep, context: ContextDep) -> Response:
    secret = await instance_secret(context.database, context.settings)
    email_id = tracking.read_open_token(secret, token)
    if email_id is not None:
        try:
            await emails.record_open(session, context.clock, email_id)
        except SQLAlchemyError:
            # The image must still load; the lost open is in the log.
            logger.exception("could not record an open of email %s", email_id)
    return Response(PIXEL, media_type="image/gif", headers=NO_CACHE)


@router.get("/t/c/{token}")
async def click(
    token: str, request: Request, session: SessionDep, context: ContextDep
) -> RedirectResponse:
    secret = await instance_secret(context.database, context.settings)
    target = tracking.read_click_token(secret, token)
    if target is None:
        raise NotFound("Link not found.")
    try:
        await emails.record_click(
            session, context.clock, target.email_id, target.url,
            ip_address=request.client.host if request.client else None,
            user_agent=request.headers.get("user-agent"),
        )  # fmt: skip
    except SQLAlchemyError:
        # The recipient still gets where the link goes.
        logger.exception("could not record a click in email %s", target.email_id)
    return RedirectResponse(target.url, status_code=302, headers=NO_CACHE)


async def _unsubscribe_email_id(token: str, context: ContextDep) -> str:
    secret = await instance_secret(context.database, context.settings)
    email_id = tracking.read_unsubscribe_token(secret, token)
    if email_id is None:
        raise NotFound("Link not found.")
    return email_id


@router.get("/t/u/{token}")
async def unsubscribe_page(token: str, context: ContextDep) -> HTMLResponse:
    await _unsubscribe_email_id(token, context)
    return HTMLResponse(UNSUBSCRIBE_PAGE, headers=NO_CACHE)


@router.post("/t/u/{token}")
async def unsubscribe(token: str, session: SessionDep, context: ContextDep) -> HTMLResponse:
    email_id = await _unsubscribe_email_id(token, context)
    await emails.unsubscribe(session, context.clock, email_id)
    return HTMLResponse(UNSUBSCRIBED_PAGE, headers=NO_CACHE)


@router.get("/t/a/{token}")
async def download_attachment(token: str, session: SessionDep, context: ContextDep) -> Response:
    secret = await instance_secret(context.database, context.settings)
    attachment_id = read_download_token(secret, token, context.clock.now())
    if attachment_id is None:
        raise NotFound("Download link not found or expired.")
    attachment = await emails.attachment_for_download(session, attachment_id)
    disposition = f"attachment; filename*=UTF-8''{quote(attachment.filename, safe='')}"
    return Response(
        attachment.content,
        media_type=attachment.content_type,
        headers={"Content-Disposition": disposition, **NO_CACHE},
    )
