"""POST /emails, POST /emails/batch, PATCH /emails/:id, POST /emails/:id/cancel."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from mailbridge.api.deps import ContextDep, Sender
from mailbridge.api.openapi import json_body
from mailbridge.api.send_path import answer_response, answer_send
from mailbridge.services import email as emails
from mailbridge.services.accounts import Principal
from mailbridge.wire import declared

router = APIRouter(tags=["emails"])
# The send routes read the header themselves; documented by hand (1 to 255 characters:
# services/email/_idempotency.py check_key, a 400 otherwise).
IDEMPOTENCY_KEY_DOC: dict[str, Any] = {
    "parameters": [
        {"name": "Idempotency-Key", "in": "header", "required": False,
         "schema": {"type": "string", "minLength": 1, "maxLength": 255}},
    ]
}  # fmt: skip
# Resend's `x-batch-validation: permissive` is told in prose, not as a parameter: OpenAPI
# cannot make the body's schema depend on a header, and with it the items that break
# the schema are answered 200 in `errors` (docs/decisions.md, "Permissive batches").
BATCH_DOC: dict[str, Any] = {
    **IDEMPOTENCY_KEY_DOC,
    "description": (
        "Up to 100 emails. With the header `x-batch-validation: permissive` the emails "
        "that pass are sent and the others are answered in `errors: [{index, message}]` "
        "(200), whatever they hold; `strict`, the default, refuses the batch (422)."
    ),
}


# One to 100 emails (the service's own check, in its words).
Batch = Annotated[
    list[emails.SendEmailRequest], Field(min_length=1, max_length=emails.MAX_SEND_BATCH)
]


class Reschedule(BaseModel):
    # Not blank; what it names is the service's to read (ISO 8601 or "in 1 hour").
    scheduled_at: Annotated[str, declared(pattern=r"\S")]


# Well-formed JSON sends are answered by mailbridge.api.send_path ahead of these routes,
# with the same functions; these stay the OpenAPI description and answer the rest.
@router.post("/emails", openapi_extra=IDEMPOTENCY_KEY_DOC | json_body(emails.SendEmailRequest))
async def send_email(
    payload: Annotated[Any, Body()], request: Request, principal: Sender
) -> Response:
    return await _send(request, principal, payload, batch=False)


@router.post("/emails/batch", openapi_extra=BATCH_DOC | json_body(Batch))
async def send_batch(
    payload: Annotated[Any, Body()], request: Request, principal: Sender
) -> Response:
    return await _send(request, principal, payload, batch=True)


async def _send(request: Request, principal: Principal, payload: Any, *, batch: bool) -> Response:
    answer = await answer_send(
        request.app.state.context, request.app.state.email_writer, principal, payload,
        batch=batch, idempotency_key=request.headers.get("idempotency-key"),
        validation=request.headers.get("x-batch-validation"),
    )  # fmt: skip
    return answer_response(answer)


@router.patch("/emails/{email_id}")
async def reschedule(
    email_id: str, body: Reschedule, principal: Sender, context: ContextDep
) -> dict[str, Any]:
    await emails.reschedule_email(context, principal, email_id, body.scheduled_at)
    return {"object": "email", "id": email_id}


@router.post("/emails/{email_id}/cancel")
async def cancel(email_id: str, principal: Sender, context: ContextDep) -> dict[str, Any]:
    await emails.cancel_email(context, principal, email_id)
    return {"object": "email", "id": email_id}
