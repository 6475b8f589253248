"""POST /emails, POST /emails/batch, PATCH /emails/:id, POST /emails/:id/cancel."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mailbridge.api.bodies import validate_body
from mailbridge.api.deps import ContextDep, Sender
from mailbridge.errors import ValidationError
from mailbridge.services import emails
from mailbridge.services.auth import Principal
from mailbridge.services.context import ServiceContext
from mailbridge.services.email_acceptance import EmailWriter
from mailbridge.services.email_requests import SendEmailRequest

router = APIRouter(tags=["emails"])
# The send routes read the header themselves (see _SendCall); documented by hand.
IDEMPOTENCY_KEY_DOC: dict[str, Any] = {
    "parameters": [
        {"name": "Idempotency-Key", "in": "header", "required": False,
         "schema": {"type": "string"}},
    ]
}  # fmt: skip


class Reschedule(BaseModel):
    scheduled_at: str


def _writer(request: Request) -> EmailWriter:
    writer: EmailWriter = request.app.state.email_writer
    return writer


class _SendCall:
    """What the send routes need besides the caller, read straight off the request.

    The send routes are the hot path: FastAPI solves every dependency (and re-reads the
    query, headers and cookies for each) on every call, which costs more than the
    lookups themselves, so these routes depend on the caller only.
    """

    def __init__(self, request: Request, principal: Principal) -> None:
        self.principal = principal
        self.context: ServiceContext = request.app.state.context
        self.writer = _writer(request)
        self.idempotency_key = request.headers.get("idempotency-key")


def _answer(answer: emails.Answer) -> JSONResponse:
    return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)


@router.post("/emails", openapi_extra=IDEMPOTENCY_KEY_DOC)
async def send_email(
    payload: Annotated[Any, Body()], request: Request, principal: Sender
) -> JSONResponse:
    call = _SendCall(request, principal)
    body = validate_body(SendEmailRequest, payload)
    answer = await emails.send(
        call.context, call.writer, call.principal, [body], batch=False,
        idempotency_key=call.idempotency_key, payload=payload,
    )  # fmt: skip
    return _answer(answer)


@router.post("/emails/batch", openapi_extra=IDEMPOTENCY_KEY_DOC)
async def send_batch(
    payload: Annotated[Any, Body()], request: Request, principal: Sender
) -> JSONResponse:
    call = _SendCall(request, principal)
    if not isinstance(payload, list):
        raise ValidationError("The body of POST /emails/batch is a JSON array of emails.")
    bodies = [validate_body(SendEmailRequest, item, (index,)) for index, item in enumerate(payload)]
    answer = await emails.send(
        call.context, call.writer, call.principal, bodies, batch=True,
        idempotency_key=call.idempotency_key, payload=payload,
    )  # fmt: skip
    return _answer(answer)


@router.patch("/emails/{email_id}")
async def reschedule(
    email_id: str, body: Reschedule, principal: Sender, context: ContextDep
) -> dict[str, Any]:
    await emails.reschedule(context, principal, email_id, body.scheduled_at)
    return {"object": "email", "id": email_id}


@router.post("/emails/{email_id}/cancel")
async def cancel(email_id: str, principal: Sender, context: ContextDep) -> dict[str, Any]:
    await emails.cancel(context, principal, email_id)
    return {"object": "email", "id": email_id}
