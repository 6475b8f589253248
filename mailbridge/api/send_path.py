"""POST /emails and POST /emails/batch answered straight off ASGI, ahead of FastAPI's routing.

The send routes are the hot path of the service. Through FastAPI each call also passes
its exception and exit-stack middlewares, the router's matching, the request object,
dependency solving (which re-reads query, headers and cookies) and the response
class: a large share of the CPU a send costs (docs/decisions.md, "Send-path
throughput"). This innermost middleware answers a well-formed JSON send itself, with the
same functions the FastAPI routes call (:func:`answer_send`) and the same error envelope
(:func:`~mailbridge.api.envelope.known_error_response`). Anything else — another content
type, a body that is not JSON, an empty body — goes on to the FastAPI route unchanged,
with the body it already read, so those answers stay FastAPI's own.

Authentication, the request log and the rate limit are outer middlewares: they apply to
both ways alike. The FastAPI routes stay the documentation (OpenAPI) and the fallback.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailbridge.api.bodies import validate_body
from mailbridge.api.envelope import known_error_response, translate_validation_error
from mailbridge.errors import ValidationError
from mailbridge.services import email as emails
from mailbridge.services.accounts import Action, Principal
from mailbridge.services.email import EmailWriter, SendEmailRequest
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.json_text import json_encoder

SEND_PATHS = {"/emails": False, "/emails/batch": True}  # path -> batch
JSON = b"application/json"


def _is_json(content_type: bytes) -> bool:
    """What FastAPI reads as JSON: application/json or application/*+json, any parameters."""
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


def batch_mode(value: str | None) -> bool:
    """Whether ``x-batch-validation`` asks for a permissive batch (Resend's header):
    ``strict`` (the default) refuses a batch with any bad email, ``permissive`` sends the
    good ones and names the others."""
    mode = (value or "strict").strip().lower()
    if mode not in ("strict", "permissive"):
        raise ValidationError("`x-batch-validation` must be `strict` or `permissive`.")
    return mode == "permissive"


def _validated(item: Any, index: int, permissive: bool) -> SendEmailRequest | emails.Refused:
    try:
        return validate_body(SendEmailRequest, item, (index,))
    except RequestValidationError as problem:
        if not permissive:
            raise
        return emails.Refused(index, translate_validation_error(problem).message)


async def answer_send(
    context: ServiceContext,
    writer: EmailWriter,
    principal: Principal,
    payload: Any,
    *,
    batch: bool,
    idempotency_key: str | None,
    validation: str | None = None,
) -> emails.SendAnswer:
    """Validate a parsed send body (one email, or a batch's list) and send it."""
    permissive = batch and batch_mode(validation)
    bodies: list[SendEmailRequest | emails.Refused]
    if not batch:
        bodies = [validate_body(SendEmailRequest, payload)]
    elif isinstance(payload, list):
        bodies = [_validated(item, i, permissive) for i, item in enumerate(payload)]
    else:
        raise ValidationError("The body of POST /emails/batch is a JSON array of emails.")
    return await emails.send_email(
        context, writer, principal, bodies, batch=batch,
        idempotency_key=idempotency_key, payload=payload, permissive=permissive,
    )  # fmt: skip


async def send_composed(
    request: Request, principal: Principal, body: dict[str, Any], *,
    idempotency_key: str | None = None,
) -> emails.SendAnswer:  # fmt: skip
    """One email a route composed itself (an inbox's reply, forward or draft) through the
    same path as ``POST /emails``, with the request's ``Idempotency-Key`` (or the route's
    own ``idempotency_key``)."""
    return await answer_send(
        request.app.state.context, request.app.state.email_writer, principal, body,
        batch=False, idempotency_key=idempotency_key or request.headers.get("idempotency-key"),
    )  # fmt: skip


# As JSONResponse renders, with an encoder built once.
_ANSWER_JSON = json_encoder((",", ":"), ensure_ascii=False, allow_nan=False)


def answer_response(answer: emails.SendAnswer) -> Response:
    return Response(
        _ANSWER_JSON(answer.body).encode(), status_code=answer.status, headers=answer.headers,
        media_type="application/json",
    )  # fmt: skip


class SendPath:
    def __init__(self, app: ASGIApp, context: ServiceContext, writer: EmailWriter) -> None:
        self.app = app
        self.context = context
        self.writer = writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        batch = SEND_PATHS.get(scope["path"]) if scope["type"] == "http" else None
        if batch is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        content_type, idempotency_key, validation = None, None, None
        for name, value in scope["headers"]:
            if name == b"content-type" and content_type is None:
                content_type = value
            elif name == b"idempotency-key" and idempotency_key is None:
                idempotency_key = value.decode("latin-1")
            elif name == b"x-batch-validation" and validation is None:
                validation = value.decode("latin-1")
        if content_type is None or not _is_json(content_type):
            await self.app(scope, receive, send)
            return
        body, final = await _read_body(receive)
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        if payload is None:  # FastAPI's own missing-body and invalid-JSON answers
            await self.app(scope, _replay(body, final, receive), send)
            return
        principal: Principal = scope["state"]["principal"]
        try:
            principal.authorize(Action.SEND)
            answer = await answer_send(
                self.context, self.writer, principal, payload,
                batch=batch, idempotency_key=idempotency_key, validation=validation,
            )  # fmt: skip
        except Exception as error:
            response = known_error_response(error)
            if response is None:
                raise
            await response(scope, receive, send)
            return
        await answer_response(answer)(scope, receive, send)


async def _read_body(receive: Receive) -> tuple[bytes, Message]:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), message


def _replay(body: bytes, final: Message, receive: Receive) -> Receive:
    """The body already read, as one message, then whatever the connection says next."""
    messages: list[Message] = (
        [{"type": "http.request", "body": body, "more_body": False}]
        if final["type"] == "http.request"
        else [{"type": "http.request", "body": body, "more_body": True}, final]
    )

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay
