"""POST /events/send: a custom event about a contact (202; runs start and resume)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailbridge.api.deps import ContextDep, Sender
from mailbridge.services import automations
from mailbridge.services.automations import SendEventRequest

router = APIRouter(tags=["events"])


@router.post("/events/send", status_code=202)
async def send_event(
    body: SendEventRequest, principal: Sender, context: ContextDep
) -> dict[str, Any]:
    return await automations.send_event(context, principal, body)
