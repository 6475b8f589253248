"""The baseline of bench/send.py: a bare FastAPI endpoint doing the same request validation
as POST /emails (body model, address checks), with no auth, storage or logging."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from mailbridge.errors import InvalidFromAddress, InvalidToAddress
from mailbridge.mail.addresses import parse_mailbox, parse_recipient
from mailbridge.services.email import SendEmailRequest
from mailbridge.storage.types import new_id

app = FastAPI()


@app.post("/emails")
async def send(body: SendEmailRequest) -> Any:
    if body.from_ is None or parse_mailbox(body.from_) is None:
        return JSONResponse(InvalidFromAddress().to_envelope(), status_code=422)
    for address in [*body.to, *body.cc, *body.bcc]:
        if parse_recipient(address) is None:
            return JSONResponse(InvalidToAddress().to_envelope(), status_code=422)
    return {"id": new_id()}
