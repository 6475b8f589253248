"""The inbox pages: the team's inboxes, an inbox's threads by folder (unread marked,
labels shown) and its drafts, and a thread — its messages (HTML in a sandboxed frame,
remote images blocked), its drafts with a send button, reply, forward and assign forms,
the folder moves, and what the inbox's agent did with each message. Everything goes
through the API as the signed-in member, as every dashboard page does; the agent's
record, which the API does not serve, is read from the inboxes context for the
member's team."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from mailbridge.dashboard._common import act, api_as, badge, failed, link, member, next_href
from mailbridge.dashboard._render import page
from mailbridge.dashboard._session import context_of
from mailbridge.services import inboxes as inbox_context

router = APIRouter()

FOLDERS = ["inbox", "archive", "spam", "sent", "trash"]


def _inbox_href(inbox_ref: str) -> str:
    return f"/dashboard/inboxes/{quote(inbox_ref, safe='@')}"


def _thread_href(inbox_ref: str, thread_id: str) -> str:
    return f"{_inbox_href(inbox_ref)}/threads/{quote(thread_id)}"


@router.get("/inboxes")
async def inboxes(request: Request, after: str | None = None) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get("/inboxes", after=after)
    rows = [
        [link(item.get("name") or item["email_address"], _inbox_href(item["id"])),
         item["email_address"], item.get("unread"), item.get("last_received")]
        for item in answer.items()
    ]  # fmt: skip
    return page(
        request, "listing.html", me, title="Inboxes", active="/dashboard/inboxes",
        columns=["Inbox", "Address", "Unread", "Last received"], rows=rows,
        empty=answer.message or "No inbox yet: POST /inboxes with an address of a "
        "receiving domain.", next_href=next_href(request, answer),
    )  # fmt: skip


@router.get("/inboxes/{inbox_ref}")
async def threads(
    request: Request, inbox_ref: str, folder: str = "inbox", after: str | None = None,
    flash: str | None = None,
) -> Response:  # fmt: skip
    me = await member(request)
    folder = folder if folder in FOLDERS else "inbox"
    async with api_as(request, me) as api:
        inbox = await api.get(f"/inboxes/{inbox_ref}")
        if not inbox.ok:
            return failed(request, me, inbox, "/dashboard/inboxes")
        answer = await api.get(f"/inboxes/{inbox_ref}/threads", folders=folder, after=after)
    base = _inbox_href(inbox_ref)
    rows = [
        [badge("read" if item["read"] else "unread"),
         link(item.get("subject") or "(no subject)", f"{base}/threads/{item['id']}"),
         item.get("from"), ", ".join(label["name"] for label in item["labels"]),
         item["email_count"], item["received_at"]]
        for item in answer.items()
    ]  # fmt: skip
    return page(
        request, "listing.html", me, title=f"Inbox {inbox.body.get('email_address')}",
        active="/dashboard/inboxes", filters=[("folder", "Folder", folder, FOLDERS)],
        columns=["", "Subject", "From", "Labels", "Messages", "Latest"], rows=rows,
        empty=answer.message or f"Nothing in {folder}.", next_href=next_href(request, answer),
        flash=flash, links=[("Drafts", f"{base}/drafts")],
    )  # fmt: skip


@router.get("/inboxes/{inbox_ref}/threads/{thread_id}")
async def thread(
    request: Request, inbox_ref: str, thread_id: str, images: bool = False,
    flash: str | None = None,
) -> Response:  # fmt: skip
    me = await member(request)
    base = f"/inboxes/{inbox_ref}/threads/{thread_id}"
    async with api_as(request, me) as api:
        summary = await api.get(base)
        if not summary.ok:
            return failed(request, me, summary, _inbox_href(inbox_ref))
        messages = await api.get(f"{base}/emails", limit=100)
        drafts = await api.get(f"/inboxes/{inbox_ref}/drafts", limit=100)
        assignee_email = None
        if summary.body.get("assignee_id"):
            team = await api.get("/members", limit=100)
            assignee_email = next(
                (item.get("email") for item in team.items()
                 if item.get("id") == summary.body["assignee_id"]),
                summary.body["assignee_id"],
            )  # fmt: skip
        if not summary.body.get("read") and me.may_write:  # opened: read, as mail clients do
            await api.call("PATCH", base, json={"read": True})
    thread_drafts: list[dict[str, Any]] = [
        item for item in drafts.items() if item.get("thread_id") == thread_id
    ]
    ordered = list(reversed(messages.items()))  # oldest first, as a conversation reads
    async with context_of(request).database.session() as session:
        calls = await inbox_context.agent_calls_of(session, me.principal.team_id, thread_id)
    return page(
        request, "inbox_thread.html", me, title=summary.body.get("subject") or "(no subject)",
        active="/dashboard/inboxes", thread=summary.body, messages=ordered,
        drafts=thread_drafts, inbox_href=_inbox_href(inbox_ref), images=images,
        latest=ordered[-1] if ordered else None, folders=["inbox", "archive", "spam", "trash"],
        flash=flash, agent_calls=calls, assignee_email=assignee_email,
    )  # fmt: skip


@router.get("/inboxes/{inbox_ref}/drafts")
async def drafts(request: Request, inbox_ref: str, after: str | None = None) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        inbox = await api.get(f"/inboxes/{inbox_ref}")
        if not inbox.ok:
            return failed(request, me, inbox, "/dashboard/inboxes")
        answer = await api.get(f"/inboxes/{inbox_ref}/drafts", after=after)
    return page(
        request, "inbox_drafts.html", me, title=f"Drafts of {inbox.body.get('email_address')}",
        active="/dashboard/inboxes", drafts=answer.items(), inbox_href=_inbox_href(inbox_ref),
        next_href=next_href(request, answer), empty=answer.message or "No draft.",
    )  # fmt: skip


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/reply")
async def reply(
    request: Request, inbox_ref: str, thread_id: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
    email_id: Annotated[str, Form(max_length=100)] = "",
    text: Annotated[str, Form(max_length=100_000)] = "",
) -> Response:  # fmt: skip
    back = _thread_href(inbox_ref, thread_id)
    return await act(
        request, csrf, "POST", f"/inboxes/{inbox_ref}/threads/{thread_id}/emails/{email_id}/reply",
        body={"text": text}, back=back, done=f"{back}?flash=Reply+queued",
    )  # fmt: skip


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/forward")
async def forward(
    request: Request, inbox_ref: str, thread_id: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
    email_id: Annotated[str, Form(max_length=100)] = "",
    to: Annotated[str, Form(max_length=2000)] = "",
    text: Annotated[str, Form(max_length=100_000)] = "",
    attach_original: Annotated[str, Form(max_length=10)] = "",
) -> Response:  # fmt: skip
    back = _thread_href(inbox_ref, thread_id)
    recipients = [part.strip() for part in to.replace(";", ",").split(",") if part.strip()]
    body = {"to": recipients, "text": text or None, "attach_original": bool(attach_original)}
    return await act(
        request, csrf, "POST",
        f"/inboxes/{inbox_ref}/threads/{thread_id}/emails/{email_id}/forward",
        body=body, back=back,
        done=f"{back}?flash=Forward+queued",
    )  # fmt: skip


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/assign")
async def assign(
    request: Request, inbox_ref: str, thread_id: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
    assignee: Annotated[str, Form(max_length=320)] = "",
) -> Response:  # fmt: skip
    back = _thread_href(inbox_ref, thread_id)
    return await act(
        request, csrf, "PATCH", f"/inboxes/{inbox_ref}/threads/{thread_id}",
        body={"assignee_id": assignee.strip() or None}, back=back,
        done=f"{back}?flash={'Assigned' if assignee.strip() else 'Unassigned'}",
    )  # fmt: skip


@router.post("/inboxes/{inbox_ref}/drafts/{draft_id}/send")
async def send_draft(
    request: Request, inbox_ref: str, draft_id: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
    thread_id: Annotated[str, Form(max_length=100)] = "",
) -> Response:  # fmt: skip
    # A standalone draft is sent from the drafts page.
    back = _thread_href(inbox_ref, thread_id) if thread_id else f"{_inbox_href(inbox_ref)}/drafts"
    return await act(
        request, csrf, "POST", f"/inboxes/{inbox_ref}/drafts/{draft_id}/send",
        back=back, done=f"{back}?flash=Draft+sent",
    )  # fmt: skip


@router.post("/inboxes/{inbox_ref}/threads/{thread_id}/move")
async def move(
    request: Request, inbox_ref: str, thread_id: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
    folder: Annotated[str, Form(max_length=20)] = "",
) -> Response:  # fmt: skip
    inbox = _inbox_href(inbox_ref)
    return await act(
        request, csrf, "PATCH", f"/inboxes/{inbox_ref}/threads/{thread_id}",
        body={"folder": folder}, back=f"{inbox}/threads/{thread_id}",
        done=f"{inbox}?folder={quote(folder)}&flash=Moved",
    )  # fmt: skip
