"""Inboxes and their labels (``/inboxes``, ``/inboxes/:id_or_address/labels``): the
routes the official SDKs' ``inboxes`` and ``inboxes.labels`` call. An inbox is named by
its id or its email address wherever a path takes one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body, unpaged_list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import inboxes
from mailbridge.storage.tables import Inbox

router = APIRouter(tags=["inboxes"])


class CreateInbox(BaseModel):
    email_address: str = Field(min_length=3, max_length=320)
    name: str | None = Field(default=None, max_length=320)
    from_name: str | None = Field(default=None, max_length=320)
    forwarding: bool = False


class CreateLabel(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    color: str | None = Field(default=None, max_length=7)


@router.post("/inboxes", status_code=201)
async def create_inbox(
    body: CreateInbox, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    inbox = await inboxes.create_inbox(session, context.clock, principal.team_id, body.model_dump())
    return {"object": "inbox", "id": inbox.id}


@router.get("/inboxes")
async def list_inboxes(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    found = await inboxes.list_inboxes(session, principal.team_id, page)
    unread = await inboxes.unread_counts(session, [inbox.id for inbox in found.items])

    def view(inbox: Inbox) -> dict[str, Any]:
        shown = inboxes.inbox_view(inbox, unread.get(inbox.id, 0))
        del shown["object"]
        return shown

    return list_body(found, view)


@router.get("/inboxes/{inbox_ref}")
async def get_inbox(inbox_ref: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    unread = await inboxes.unread_counts(session, [inbox.id])
    drafts = await inboxes.open_drafts(session, [inbox.id])
    return inboxes.inbox_view(inbox, unread.get(inbox.id, 0), drafts.get(inbox.id, 0))


@router.patch("/inboxes/{inbox_ref}")
async def update_inbox(
    inbox_ref: str, body: Annotated[dict[str, Any], Body()], principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    await inboxes.update_inbox(session, context.clock, inbox, body)
    return {"object": "inbox", "id": inbox.id}


@router.delete("/inboxes/{inbox_ref}")
async def delete_inbox(
    inbox_ref: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    await inboxes.delete_inbox(session, context.clock, inbox)
    return {"object": "inbox", "id": inbox.id, "deleted": True}


@router.post("/inboxes/{inbox_ref}/labels", status_code=201)
async def create_label(
    inbox_ref: str, body: CreateLabel, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    label = await inboxes.create_label(session, context.clock, inbox, body.model_dump())
    return {"object": "inbox_label", "id": label.id}


@router.get("/inboxes/{inbox_ref}/labels")
async def list_labels(inbox_ref: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    labels = await inboxes.list_labels(session, inbox)
    body = unpaged_list_body(inboxes.label_view(label) for label in labels)
    for item in body["data"]:
        del item["object"]
    return body


@router.patch("/inboxes/{inbox_ref}/labels/{label_id}")
async def update_label(
    inbox_ref: str, label_id: str, body: Annotated[dict[str, Any], Body()],
    principal: Writer, session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    label = await inboxes.get_label(session, inbox, label_id)
    await inboxes.update_label(session, context.clock, label, body)
    return {"object": "inbox_label", "id": label.id}


@router.delete("/inboxes/{inbox_ref}/labels/{label_id}")
async def delete_label(
    inbox_ref: str, label_id: str, principal: Writer, session: SessionDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    label = await inboxes.get_label(session, inbox, label_id)
    await inboxes.delete_label(session, label)
    return {"object": "inbox_label", "id": label_id, "deleted": True}


@router.get("/inboxes/{inbox_ref}/agent")
async def get_agent(
    inbox_ref: str, principal: Reader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    return inboxes.agent_view(inbox, configured=bool(context.settings.inbox_agent_url))


@router.patch("/inboxes/{inbox_ref}/agent")
async def update_agent(
    inbox_ref: str, body: Annotated[dict[str, Any], Body()], principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    inbox = await inboxes.find_inbox(session, principal.team_id, inbox_ref)
    await inboxes.update_agent(session, context.clock, inbox, body)
    return {"object": "inbox_agent", "id": inbox.id}
