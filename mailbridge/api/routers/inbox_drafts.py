"""An inbox's drafts (``/inboxes/:id_or_address/drafts``): the SDKs' ``inboxes.drafts``.
A draft is sent as an ordinary email from the inbox's address, through ``POST
/emails``' path (validation, quota, idempotency, webhooks)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse, Response

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, Sender, SessionDep, Writer
from mailbridge.api.send_path import answer_response, send_composed
from mailbridge.errors import ValidationError
from mailbridge.mail.attachments import FetchPolicy
from mailbridge.services import inboxes
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import InboxDraft

router = APIRouter(tags=["inboxes"])


def _policy(context: ServiceContext) -> FetchPolicy:
    settings = context.settings
    return FetchPolicy(
        allow_private=settings.webhook_allow_private, timeout=settings.attachment_fetch_timeout
    )


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationError("The body is a JSON object.")
    return body


@router.post("/inboxes/{inbox_ref}/drafts", status_code=201)
async def create_draft(
    inbox_ref: str, body: Annotated[Any, Body()], request: Request, principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    body = _object(body)
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread_id, reply_to = body.get("thread_id"), body.get("reply_to_email_id")
    if (thread_id is None) != (reply_to is None):
        raise ValidationError("A reply draft names both `thread_id` and `reply_to_email_id`.")
    if isinstance(thread_id, str) and isinstance(reply_to, str):
        thread = await inboxes.get_thread(session, inbox, thread_id)
        await inboxes.get_message(session, thread, reply_to)
    elif thread_id is not None:
        raise ValidationError("`thread_id` and `reply_to_email_id` are ids.")
    key = request.headers.get("idempotency-key")
    if key is not None and not 1 <= len(key) <= 255:
        raise ValidationError("`Idempotency-Key` is 1 to 255 characters.")
    draft = await inboxes.create_draft(
        session, context.clock, inbox, body, _policy(context), thread_id=thread_id,
        reply_to=reply_to, idempotency_key=key,
    )  # fmt: skip
    return {"object": "inbox_draft", "id": draft.id}


@router.get("/inboxes/{inbox_ref}/drafts")
async def list_drafts(
    inbox_ref: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    found = await inboxes.list_drafts(session, inbox, page)
    files = await inboxes.draft_files(session, [draft.id for draft in found.items])

    def view(draft: InboxDraft) -> dict[str, Any]:
        return inboxes.draft_list_item(draft, files[draft.id])

    return list_body(found, view)


@router.get("/inboxes/{inbox_ref}/drafts/{draft_id}")
async def get_draft(
    inbox_ref: str, draft_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    draft = await inboxes.get_draft(session, inbox, draft_id)
    files = await inboxes.draft_files(session, [draft.id])
    return inboxes.draft_view(draft, files[draft.id])


@router.patch("/inboxes/{inbox_ref}/drafts/{draft_id}")
async def update_draft(
    inbox_ref: str, draft_id: str, body: Annotated[Any, Body()], principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    draft = await inboxes.get_draft(session, inbox, draft_id)
    await inboxes.update_draft(session, context.clock, draft, _object(body), _policy(context))
    return {"object": "inbox_draft", "id": draft.id}


@router.delete("/inboxes/{inbox_ref}/drafts/{draft_id}")
async def delete_draft(
    inbox_ref: str, draft_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    draft = await inboxes.get_draft(session, inbox, draft_id)
    await inboxes.delete_draft(session, context.clock, draft)
    return {"object": "inbox_draft", "id": draft_id, "deleted": True}


@router.post("/inboxes/{inbox_ref}/drafts/{draft_id}/send")
async def send_draft(
    inbox_ref: str, draft_id: str, request: Request, principal: Sender,
    body: Annotated[Any, Body()] = None,
) -> Response:  # fmt: skip
    """Send the draft from the inbox's address; a reply draft threads like a reply."""
    headers = _object(body).get("headers") if body is not None else None
    context: ServiceContext = request.app.state.context
    key = request.headers.get("idempotency-key")
    async with context.database.session() as session:
        inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
        draft = await inboxes.get_draft(session, inbox, draft_id)
        files = (await inboxes.draft_files(session, [draft.id]))[draft.id]
        send_key = f"inbox-draft:{draft.id}"
        if draft.email_id is not None:
            # With an Idempotency-Key, a repeat (its answer lost) is answered with the
            # email it sent; without one, the caller is told. Never a second email.
            if key is None:
                raise ValidationError("The draft was sent already.")
            return JSONResponse({"id": draft.email_id})
        if draft.reply_to_email_id and draft.thread_id:
            thread = await inboxes.get_thread(session, inbox, draft.thread_id)
            original = await inboxes.get_message(session, thread, draft.reply_to_email_id)
            references = await inboxes.message_references(session, draft.reply_to_email_id)
            content = {
                "cc": draft.cc or None, "bcc": draft.bcc or None, "subject": draft.subject,
                "html": draft.html, "text": draft.text, "headers": headers,
                "attachments": inboxes.attachment_payload(files) or None,
            }  # fmt: skip
            payload = inboxes.reply_payload(inbox, original, references, content)
            if draft.to:
                payload["to"] = list(draft.to)
        else:
            payload = inboxes.send_payload(draft, files, headers)
            payload["from"] = inboxes.sender(inbox)
    # The draft's own key, whatever the caller's: two sends of one draft at once, or a
    # send retried after its answer was lost, make one email (the second waits or is
    # answered with the first's id).
    answer = await send_composed(request, principal, payload, idempotency_key=send_key)
    if answer.status == 200 and isinstance(answer.body, dict) and "id" in answer.body:
        async with context.database.session() as session:
            inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
            draft = await inboxes.get_draft(session, inbox, draft_id)
            await inboxes.mark_sent(session, context.clock, draft, str(answer.body["id"]))
    return answer_response(answer)
