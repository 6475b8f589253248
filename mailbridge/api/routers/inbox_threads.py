"""An inbox's threads, their messages and their labels
(``/inboxes/:id_or_address/threads...``): the SDKs' ``inboxes.threads``,
``inboxes.threads.emails`` and ``inboxes.threads.labels``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.api.deps import ContextDep, PageDep, Reader, Sender, SessionDep, Writer
from mailbridge.api.send_path import answer_response, send_composed
from mailbridge.errors import ValidationError
from mailbridge.services import inboxes
from mailbridge.services.accounts import Principal
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.tables import Inbox, InboxLabel, InboxThread

router = APIRouter(tags=["inboxes"])


class ThreadLabels(BaseModel):
    labels: list[str]


def _label_list(labels: list[InboxLabel]) -> dict[str, Any]:
    return {"object": "list", "data": [inboxes.label_summary(label) for label in labels]}


@router.get("/inboxes/{inbox_ref}/threads")
async def list_threads(
    inbox_ref: str, principal: Reader, session: SessionDep, page: PageDep,
    folders: Annotated[str | None, Query()] = None,
    labels: Annotated[str | None, Query()] = None,
    read: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    found = await inboxes.list_threads(
        session, inbox, page, folders=folders, labels=labels, read=read
    )
    named = await inboxes.thread_labels(session, found.items)
    drafted = await inboxes.threads_with_drafts(session, [thread.id for thread in found.items])
    views = [
        inboxes.thread_view(thread, named[thread.id], has_draft=thread.id in drafted)
        for thread in found.items
    ]
    return {"object": "list", "has_more": found.has_more, "data": views}


@router.get("/inboxes/{inbox_ref}/threads/search")
async def search_threads(
    inbox_ref: str, principal: Reader, session: SessionDep, page: PageDep,
    folders: Annotated[str | None, Query()] = None,
    labels: Annotated[str | None, Query()] = None,
    read: Annotated[str | None, Query()] = None,
    query: Annotated[str | None, Query(max_length=1000)] = None,
    from_: Annotated[str | None, Query(alias="from", max_length=5000)] = None,
    to: Annotated[str | None, Query(max_length=5000)] = None,
    cc: Annotated[str | None, Query(max_length=5000)] = None,
    bcc: Annotated[str | None, Query(max_length=5000)] = None,
    has_attachment: Annotated[str | None, Query()] = None,
    start_date: Annotated[str | None, Query()] = None,
    end_date: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:  # fmt: skip
    """Threads whose messages hold every word of ``query`` (full text: FTS5 on SQLite,
    tsvector on PostgreSQL) and the addresses given, with the list's filters; each with
    ``matched_email_id``."""
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    addresses = {
        field: (value or "").split(",")
        for field, value in (("from", from_), ("to", to), ("cc", cc), ("bcc", bcc))
    }
    match = inboxes.search_match(session, inbox.id, query, addresses)
    where = inboxes.thread_filters(has_attachment, start_date, end_date)
    if match is not None:
        where.append(InboxThread.id.in_(match.threads()))
    found = await inboxes.list_threads(
        session, inbox, page, folders=folders, labels=labels, read=read, where=where
    )
    ids = [thread.id for thread in found.items]
    named = await inboxes.thread_labels(session, found.items)
    drafted = await inboxes.threads_with_drafts(session, ids)
    best = await match.best(session, ids) if match is not None else {}
    views = [
        {
            **inboxes.thread_view(thread, named[thread.id], has_draft=thread.id in drafted),
            "matched_email_id": best.get(thread.id),
        }
        for thread in found.items
    ]
    return {"object": "list", "has_more": found.has_more, "data": views}


@router.get("/inboxes/{inbox_ref}/threads/{thread_id}")
async def get_thread(
    inbox_ref: str, thread_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    named = await inboxes.thread_labels(session, [thread])
    return inboxes.thread_summary(thread, named[thread.id])


@router.patch("/inboxes/{inbox_ref}/threads/{thread_id}")
async def update_thread(
    inbox_ref: str, thread_id: str, body: Annotated[dict[str, Any], Body()],
    principal: Writer, session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    await inboxes.update_thread(session, context.clock, thread, body)
    named = await inboxes.thread_labels(session, [thread])
    return inboxes.thread_summary(thread, named[thread.id])


@router.delete("/inboxes/{inbox_ref}/threads/{thread_id}")
async def delete_thread(
    inbox_ref: str, thread_id: str, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    await inboxes.delete_thread(session, context.clock, thread)
    return {"object": "inbox_thread", "id": thread_id, "deleted": True}


async def _links(context: ServiceContext) -> inboxes.Links:
    secret = await instance_secret(context.database, context.settings)
    return inboxes.Links(context.settings.public_url, secret, context.clock.now())


@router.get("/inboxes/{inbox_ref}/threads/{thread_id}/emails")
async def list_thread_emails(
    inbox_ref: str, thread_id: str, principal: Reader, session: SessionDep, page: PageDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    found, views = await inboxes.list_messages(session, thread, page, await _links(context))
    return {
        "object": "list",
        "has_more": found.has_more,
        "data": [views[message.id] for message in found.items if message.id in views],
    }


@router.get("/inboxes/{inbox_ref}/threads/{thread_id}/emails/{email_id}")
async def get_thread_email(
    inbox_ref: str, thread_id: str, email_id: str, principal: Reader, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    return await inboxes.get_message(session, thread, email_id, await _links(context))


async def _relabel(
    principal: Principal, session: AsyncSession, context: ServiceContext, inbox_ref: str,
    thread_id: str, labels: list[str], *, replace: bool,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    found = await inboxes.label_thread(
        session, context.clock, inbox, thread, labels, replace=replace
    )
    return _label_list(found)


async def _answered(
    session: AsyncSession, principal: Principal, payload: Any, inbox_ref: str, thread_id: str,
    email_id: str,
) -> tuple[Inbox, dict[str, Any]]:  # fmt: skip
    """The inbox and the message a reply or a forward is of, once the body is an object."""
    if not isinstance(payload, dict):
        raise ValidationError("The body is a JSON object.")
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    return inbox, await inboxes.get_message(session, thread, email_id)


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/emails/{email_id}/reply")
async def reply(
    inbox_ref: str, thread_id: str, email_id: str, payload: Annotated[Any, Body()],
    request: Request, principal: Sender,
) -> Response:  # fmt: skip
    """Reply from the inbox's address: an ordinary email (``POST /emails``' validation,
    quota, idempotency and webhooks), threaded by the In-Reply-To and References set
    here; it joins the thread when it goes out."""
    context: ServiceContext = request.app.state.context
    async with context.database.session() as session:
        inbox, original = await _answered(
            session, principal, payload, inbox_ref, thread_id, email_id
        )
        references = await inboxes.message_references(session, email_id)
    body = inboxes.reply_payload(inbox, original, references, payload)
    return answer_response(await send_composed(request, principal, body))


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/emails/{email_id}/forward")
async def forward(
    inbox_ref: str, thread_id: str, email_id: str, payload: Annotated[Any, Body()],
    request: Request, principal: Sender,
) -> Response:  # fmt: skip
    """Forward a message from the inbox's address: the original quoted inline and its
    files attached again, through ``POST /emails``' path."""
    context: ServiceContext = request.app.state.context
    async with context.database.session() as session:
        inbox, original = await _answered(
            session, principal, payload, inbox_ref, thread_id, email_id
        )
        files = await inboxes.forward_files(session, context.settings.data_dir, original, payload)
    body = inboxes.forward_payload(inbox, original, payload, files)
    return answer_response(await send_composed(request, principal, body))


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/labels")
async def add_thread_labels(
    inbox_ref: str, thread_id: str, body: ThreadLabels, principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    """Add labels to the thread (the ones it has stay)."""
    return await _relabel(
        principal, session, context, inbox_ref, thread_id, body.labels, replace=False
    )


@router.put("/inboxes/{inbox_ref}/threads/{thread_id}/labels")
async def set_thread_labels(
    inbox_ref: str, thread_id: str, body: ThreadLabels, principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    """The thread's labels become these (``[]``: none)."""
    return await _relabel(
        principal, session, context, inbox_ref, thread_id, body.labels, replace=True
    )


@router.delete("/inboxes/{inbox_ref}/threads/{thread_id}/labels/{label_id}")
async def remove_thread_label(
    inbox_ref: str, thread_id: str, label_id: str, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    thread = await inboxes.get_thread(session, inbox, thread_id)
    labels = await inboxes.unlabel_thread(session, context.clock, inbox, thread, label_id)
    return _label_list(labels)
