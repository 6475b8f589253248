"""Received mail (spec §4.12, §8.3): ``/emails/receiving`` and the signed links to its bytes."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Response

from mailbridge.api.deps import ContextDep, Reader, SessionDep
from mailbridge.errors import NotFound
from mailbridge.mail.signed_links import RECEIVED_ATTACHMENT, RECEIVED_RAW, read_received_token
from mailbridge.services import inbound
from mailbridge.services.context import ServiceContext
from mailbridge.services.instance import instance_secret

router = APIRouter(tags=["receiving"])

NO_CACHE = {"Cache-Control": "no-store"}
LimitQuery = Annotated[str | None, Query()]


async def _links(context: ServiceContext) -> inbound.Links:
    secret = await instance_secret(context.database, context.settings)
    return inbound.Links(context.settings.public_url, secret, context.clock.now())


@router.get("/emails/receiving")
async def list_received(
    principal: Reader, session: SessionDep, limit: LimitQuery = None,
    after: LimitQuery = None, before: LimitQuery = None,
) -> dict[str, Any]:  # fmt: skip
    page = inbound.receiving_page(limit, after, before)
    found = await inbound.list_received(session, principal.team_id, page)
    return {
        "object": "list",
        "has_more": found.has_more,
        "data": [inbound.received_summary(row) for row in found.items],
    }


@router.get("/emails/receiving/{received_id}")
async def get_received(
    received_id: str, principal: Reader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    row = await inbound.get_received(session, principal.team_id, received_id)
    attachments = await inbound.attachments_of(session, row.id)
    return inbound.received_view(row, attachments, await _links(context))


@router.get("/emails/receiving/{received_id}/attachments")
async def list_received_attachments(
    received_id: str, principal: Reader, session: SessionDep, context: ContextDep,
    limit: LimitQuery = None, after: LimitQuery = None, before: LimitQuery = None,
    content: LimitQuery = None,
) -> dict[str, Any]:  # fmt: skip
    page = inbound.receiving_page(limit, after, before)
    with_content = inbound.check_flag(content, "content")
    found = await inbound.list_attachments(session, principal.team_id, received_id, page)
    links = await _links(context)
    root = context.settings.data_dir
    return {
        "object": "list",
        "has_more": found.has_more,
        "data": [
            inbound.attachment_view(
                item, links, inbound.attachment_content(root, item) if with_content else None
            )
            for item in found.items
        ],
    }


async def _token(context: ServiceContext, purpose: str, token: str) -> str:
    secret = await instance_secret(context.database, context.settings)
    object_id = read_received_token(secret, purpose, token, context.clock.now())
    if object_id is None:
        raise NotFound("Download link not found or expired.")
    return object_id


@router.get("/t/r/{token}", include_in_schema=False)
async def download_raw(token: str, session: SessionDep, context: ContextDep) -> Response:
    received_id = await _token(context, RECEIVED_RAW, token)
    raw = await inbound.raw_for_download(session, context.settings.data_dir, received_id)
    disposition = f'attachment; filename="{received_id}.eml"'
    return Response(
        raw, media_type="message/rfc822",
        headers={"Content-Disposition": disposition, **NO_CACHE},
    )  # fmt: skip


@router.get("/t/ra/{token}", include_in_schema=False)
async def download_attachment(token: str, session: SessionDep, context: ContextDep) -> Response:
    attachment_id = await _token(context, RECEIVED_ATTACHMENT, token)
    item = await inbound.attachment_for_download(session, attachment_id)
    name = quote(item.filename or f"{item.id}.bin", safe="")
    return Response(
        inbound.attachment_content(context.settings.data_dir, item),
        media_type=item.content_type,
        headers={"Content-Disposition": f"attachment; filename*=UTF-8''{name}", **NO_CACHE},
    )
