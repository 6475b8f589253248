"""A webhook receiver for mailbridge: checks each delivery's signature and drops repeats.

Run it with ``WEBHOOK_SECRET=whsec_... .venv/bin/uvicorn examples.webhook_receiver:app
--port 9000`` and register ``http://<this host>:9000/mailbridge`` with
``POST /webhooks`` (a loopback or private address needs
``MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE=true`` on the mailbridge side).

``verify`` checks ``X-Service-Signature`` against the raw body and
``X-Service-Timestamp`` (refusing deliveries more than 5 minutes old or early), and
returns the parsed ``{type, created_at, data}``. A retry or a replay carries the same
``X-Service-Event-Id``: keep the ids you handled (in your database) and answer 2xx to
repeats without acting twice. Anything but a 2xx makes mailbridge try again later.
"""

from __future__ import annotations

import os

from fastapi import FastAPI, Request, Response

from mailbridge.webhooks import WebhookVerificationError, verify

SECRET = os.environ["WEBHOOK_SECRET"]  # the signing_secret of the create answer
app = FastAPI()
seen: set[str] = set()  # use your database: ids of the events already handled


@app.post("/mailbridge")
async def receive(request: Request) -> Response:
    raw = await request.body()  # the bytes as sent, not parsed and serialized again
    try:
        event = verify(SECRET, request.headers, raw)  # and at most 5 minutes old
    except WebhookVerificationError:
        return Response(status_code=401)
    event_id = request.headers["X-Service-Event-Id"]
    if event_id not in seen:  # a retry or a replay repeats the id
        seen.add(event_id)
        print(event["type"], event["data"])
    return Response(status_code=200)
