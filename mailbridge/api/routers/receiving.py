"""Received mail (spec §4.12, §8.3): ``/emails/receiving`` and the signed links to its bytes."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.api.deps import ContextDep, CursorQuery, Reader, SessionDep
from mailbridge.errors import NotFound
from mailbridge.mail.signed_links import RECEIVED_ATTACHMENT, RECEIVED_RAW, read_received_token
from mailbridge.services import inbound
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.pagination import MAX_LIMIT, PageRequest
from mailbridge.storage.tables import ReceivedAttachment
from mailbridge.wire import declared

router = APIRouter(tags=["receiving"])

NO_CACHE = {"Cache-Control": "no-store"}
# ``true``, ``false``, ``1`` or ``0``, in any case (``inbound.check_flag``).
FLAG_PATTERN = "^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$"
FlagQuery = Annotated[Annotated[str, declared(pattern=FLAG_PATTERN)] | None, Query()]


async def received_page(
    limit: Annotated[int | None, Query(ge=1, le=MAX_LIMIT)] = None,
    after: CursorQuery = None,
    before: CursorQuery = None,
) -> PageRequest:
    """As ``deps.get_page`` declares them (a bad ``limit`` told in the spec's words by
    ``envelope.translate_validation_error``), read as spec §8.3 reads the receiving lists."""
    return inbound.receiving_page(None if limit is None else str(limit), after, before)


ReceivedPageDep = Annotated[PageRequest, Depends(received_page)]


async def _links(context: ServiceContext) -> inbound.Links:
    secret = await instance_secret(context.database, context.settings)
    return inbound.Links(context.settings.public_url, secret, context.clock.now())


@router.get("/emails/receiving")
async def list_received(
    principal: Reader, session: SessionDep, page: ReceivedPageDep
) -> dict[str, Any]:
    found = await inbound.list_received(session, principal.team_id, page)
    attachments = await inbound.attachments_of_many(session, [row.id for row in found.items])
    return {
        "object": "list",
        "has_more": found.has_more,
        "data": [inbound.received_summary(row, attachments.get(row.id, [])) for row in found.items],
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
    page: ReceivedPageDep, content: FlagQuery = None,
) -> dict[str, Any]:  # fmt: skip
    with_content = inbound.check_flag(content, "content")
    found = await inbound.list_attachments(session, principal.team_id, received_id, page)
    links = await _links(context)
    data = [await _attachment(session, context, item, links, with_content) for item in found.items]
    return {"object": "list", "has_more": found.has_more, "data": data}


@router.get("/emails/receiving/{received_id}/attachments/{attachment_id}")
async def get_received_attachment(
    received_id: str, attachment_id: str, principal: Reader, session: SessionDep,
    context: ContextDep, content: FlagQuery = None,
) -> dict[str, Any]:  # fmt: skip
    with_content = inbound.check_flag(content, "content")
    item = await inbound.get_attachment(session, principal.team_id, received_id, attachment_id)
    return await _attachment(session, context, item, await _links(context), with_content)


async def _attachment(
    session: AsyncSession, context: ServiceContext, item: ReceivedAttachment,
    links: inbound.Links, with_content: bool,
) -> dict[str, Any]:  # fmt: skip
    """An attachment's view; with ``with_content``, its bytes too (base64)."""
    root = context.settings.data_dir
    body = await inbound.attachment_content(session, root, item) if with_content else None
    return inbound.attachment_view(item, links, body)


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
        await inbound.attachment_content(session, context.settings.data_dir, item),
        media_type=item.content_type,
        headers={"Content-Disposition": f"attachment; filename*=UTF-8''{name}", **NO_CACHE},
    )
