"""POST /emails, POST /emails/batch, PATCH /emails/:id, POST /emails/:id/cancel."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mailbridge.api.bodies import validate_body
from mailbridge.api.deps import ContextDep, Sender
from mailbridge.errors import ValidationError
from mailbridge.services import emails
from mailbridge.services.email_acceptance import EmailWriter
from mailbridge.services.email_requests import SendEmailRequest

router = APIRouter(tags=["emails"])
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key")]


class Reschedule(BaseModel):
    scheduled_at: str


def _writer(request: Request) -> EmailWriter:
    writer: EmailWriter = request.app.state.email_writer
    return writer


def _answer(answer: emails.Answer) -> JSONResponse:
    return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)


@router.post("/emails")
async def send_email(
    payload: Annotated[Any, Body()],
    request: Request,
    principal: Sender,
    context: ContextDep,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    body = validate_body(SendEmailRequest, payload)
    answer = await emails.send(
        context, _writer(request), principal, [body], batch=False,
        idempotency_key=idempotency_key, payload=payload,
    )  # fmt: skip
    return _answer(answer)


@router.post("/emails/batch")
async def send_batch(
    payload: Annotated[Any, Body()],
    request: Request,
    principal: Sender,
    context: ContextDep,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    if not isinstance(payload, list):
        raise ValidationError("The body of POST /emails/batch is a JSON array of emails.")
    bodies = [validate_body(SendEmailRequest, item, (index,)) for index, item in enumerate(payload)]
    answer = await emails.send(
        context, _writer(request), principal, bodies, batch=True,
        idempotency_key=idempotency_key, payload=payload,
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
