"""Webhooks (spec §4.10) and their deliveries: what was sent, how each attempt went, replay;
the same history as Resend shapes it (events and their attempts), and secret rotation."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import webhooks
from mailbridge.services.webhooks import (
    WebhookChanges,
    created_webhook_view,
    delivery_view,
    webhook_view,
)
from mailbridge.wire import declared

router = APIRouter(tags=["webhooks"])


Endpoint = Annotated[
    str, declared(pattern=webhooks.ENDPOINT_PATTERN, maxLength=webhooks.MAX_ENDPOINT_LENGTH)
]
# Known names; repeats are dropped.
Events = Annotated[
    list[Annotated[str, declared(enum=list(webhooks.WEBHOOK_EVENTS))]], declared(minItems=1)
]


class CreateWebhook(BaseModel):
    endpoint: Endpoint = Field(min_length=1)
    events: Events


class UpdateWebhook(BaseModel):
    endpoint: Endpoint | None = Field(default=None, min_length=1)
    events: Events | None = None
    status: Literal["enabled", "disabled"] | None = None


@router.post("/webhooks", status_code=201)
async def create_webhook(
    body: CreateWebhook, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    webhook = await webhooks.create_webhook(
        session, context.clock, context.settings, principal.team_id, body.endpoint, body.events
    )
    return created_webhook_view(webhook)


@router.get("/webhooks")
async def list_webhooks(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await webhooks.list_webhooks(session, principal.team_id, page)
    return list_body(result, webhook_view)


@router.get("/webhooks/{webhook_id}")
async def get_webhook(webhook_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    return webhook_view(await webhooks.get_webhook(session, principal.team_id, webhook_id))


@router.patch("/webhooks/{webhook_id}")
async def update_webhook(
    webhook_id: str,
    body: UpdateWebhook,
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    changes = WebhookChanges(endpoint=body.endpoint, events=body.events, status=body.status)
    webhook = await webhooks.update_webhook(
        session, context.clock, context.settings, principal.team_id, webhook_id, changes
    )
    return webhook_view(webhook)


@router.delete("/webhooks/{webhook_id}")
async def delete_webhook(webhook_id: str, principal: Writer, session: SessionDep) -> dict[str, Any]:
    webhook = await webhooks.delete_webhook(session, principal.team_id, webhook_id)
    return {"object": "webhook", "id": str(webhook.id), "deleted": True}


@router.get("/webhooks/{webhook_id}/events")
async def list_events(
    webhook_id: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    result = await webhooks.list_events(session, webhook.id, page)
    return list_body(result, webhooks.event_summary_view)


@router.get("/webhooks/{webhook_id}/events/{event_id}")
async def get_event(
    webhook_id: str, event_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    return webhooks.event_view(await webhooks.get_event(session, webhook.id, event_id))


@router.get("/webhooks/{webhook_id}/events/{event_id}/attempts")
async def list_event_attempts(
    webhook_id: str, event_id: str, principal: Reader, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    event = await webhooks.get_event(session, webhook.id, event_id)
    result = webhooks.page_of_attempts(webhooks.attempts_of(event), page)
    return list_body(result, webhooks.attempt_view)


@router.post("/webhooks/{webhook_id}/events/{event_id}/replay")
async def replay_event(
    webhook_id: str, event_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """The event queued once more to the webhook (a new delivery, the same event id)."""
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    event = await webhooks.replay_event(session, context.clock, webhook, event_id)
    return webhooks.event_view(event)


@router.post("/webhooks/{webhook_id}/signing-secret/rotate")
async def rotate_signing_secret(
    webhook_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """A new secret, shown this once; the one before still signs for 24 hours."""
    webhook = await webhooks.rotate_secret(session, context.clock, principal.team_id, webhook_id)
    return created_webhook_view(webhook)


@router.get("/webhooks/{webhook_id}/deliveries")
async def list_deliveries(
    webhook_id: str,
    principal: Reader,
    session: SessionDep,
    page: PageDep,
    status: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    result = await webhooks.list_deliveries(session, webhook.id, page, status)
    return list_body(result, delivery_view)


@router.get("/webhooks/{webhook_id}/deliveries/{delivery_id}")
async def get_delivery(
    webhook_id: str, delivery_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    delivery = await webhooks.get_delivery(session, webhook.id, delivery_id)
    return delivery_view(delivery, with_payload=True)


@router.post("/webhooks/{webhook_id}/deliveries/{delivery_id}/replay", status_code=201)
async def replay_delivery(
    webhook_id: str,
    delivery_id: str,
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    """A new delivery of the same event (same body and event id), due now."""
    webhook = await webhooks.get_webhook(session, principal.team_id, webhook_id)
    replay = await webhooks.replay_delivery(session, context.clock, webhook, delivery_id)
    context.work_added()
    return delivery_view(replay)
