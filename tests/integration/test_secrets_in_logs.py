"""Secrets the service hands out never reach a log (DESIGN §9, trust boundaries).

The app is served by uvicorn on a real socket, so the access log is the one a deployment
writes, rendered by ``cli.log_lines`` (JSON and text). Every route that answers a secret
is called — API keys, member sessions, webhook secrets, invitation links (from the API
and from the dashboard, whose pages call the API as the member), signed download and
received-mail links — and every link a recipient or an invitee opens is followed. Then
the request log (GET /logs, GET /logs/:id, and the table itself) and the access log are
searched for each secret.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy import select

from mailbridge.cli.log_lines import formatter
from mailbridge.mail import tracking
from mailbridge.services.accounts._teams import Role
from mailbridge.services.inbound._blobs import write_blob
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.services.polls import Voter
from mailbridge.services.polls._links import vote_url
from mailbridge.storage.tables import ReceivedAttachment, ReceivedEmail, RequestLog
from tests.integration.conftest import USER_AGENT, Tenant, Tenants, bearer
from tests.integration.email_rows import AttachmentRow, add_email
from tests.integration.test_dashboard import PASSWORD, add_member, csrf_of, sign_in

ENDPOINT = "https://hooks.partner.io/mailbridge"
MASKED = "[redacted]"


@dataclass
class Served:
    """The app behind uvicorn; what its access logger wrote, as JSON and as text."""

    base_url: str
    json_lines: io.StringIO
    text_lines: io.StringIO

    @asynccontextmanager
    async def client(self) -> AsyncIterator[httpx.AsyncClient]:
        async with httpx.AsyncClient(
            base_url=self.base_url, headers={"User-Agent": USER_AGENT}
        ) as http:
            yield http

    def access_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.json_lines.getvalue().splitlines()]


@contextmanager
def access_log() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """uvicorn's access logger, at info, rendered as ``cli.log_lines`` renders it."""
    logger = logging.getLogger("uvicorn.access")
    streams = (io.StringIO(), io.StringIO())
    handlers = [logging.StreamHandler(stream) for stream in streams]
    for handler, log_format in zip(handlers, ("json", "text"), strict=True):
        handler.setFormatter(formatter(log_format))
        logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield streams
    finally:
        logger.setLevel(level)
        for handler in handlers:
            logger.removeHandler(handler)


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[Served]:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="off", log_config=None, access_log=True, ws="none"
    )
    server = uvicorn.Server(config)
    with access_log() as (json_lines, text_lines):
        task = asyncio.create_task(server.serve())
        async with asyncio.timeout(30):
            while not server.started:
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield Served(f"http://127.0.0.1:{port}", json_lines, text_lines)
        finally:
            server.should_exit = True
            await task


def path_of(url: str) -> str:
    return urlsplit(url).path


def token_of(url: str) -> str:
    """The capability a link carries: its last path segment."""
    return path_of(url).rsplit("/", 1)[1]


async def add_received(context: ServiceContext, team_id: str) -> str:
    """A received email with one attachment, its bytes stored as the listener stores them."""
    raw = b"From: ann@corp.io\r\nTo: hello@shop.io\r\nSubject: Hi\r\n\r\nHello\r\n"
    content = b"attached bytes"
    root = context.settings.data_dir
    blob, checksum = write_blob(root, raw), write_blob(root, content)
    now = context.clock.now()
    async with context.database.session() as session:
        received = ReceivedEmail(
            team_id=team_id, envelope_from="ann@corp.io", envelope_to=["hello@shop.io"],
            recipient="hello@shop.io", from_address="ann@corp.io", to=["hello@shop.io"],
            subject="Hi", size=len(raw), blob=blob, kind="message", created_at=now,
        )  # fmt: skip
        session.add(received)
        await session.flush()
        session.add(
            ReceivedAttachment(
                received_email_id=received.id, team_id=team_id, position=0, filename="a.txt",
                content_type="text/plain", size=len(content), checksum=checksum, created_at=now,
            )
        )  # fmt: skip
        await session.commit()
        return received.id


async def request_log_text(http: httpx.AsyncClient, context: ServiceContext, tenant: Tenant) -> str:
    """Everything the request log holds for the team: as GET /logs and GET /logs/:id
    answer it (which flushes the log first), and as the table stores it."""
    listed = await http.get("/logs", params={"limit": 100}, headers=tenant.headers)
    assert listed.status_code == 200 and listed.json()["has_more"] is False
    texts = [listed.text]
    texts += [
        (await http.get(f"/logs/{item['id']}", headers=tenant.headers)).text
        for item in listed.json()["data"]
    ]
    async with context.database.session() as session:
        rows = (await session.scalars(select(RequestLog))).all()
    texts += [repr(row.__dict__) for row in rows]
    return "\n".join(texts)


async def test_no_secret_the_service_hands_out_reaches_a_log(
    served: Served, context: ServiceContext, tenants: Tenants
) -> None:
    tenant = await tenants.create(plan="pro")
    secrets: dict[str, str] = {}
    base = context.settings.public_url
    async with served.client() as http, served.client() as guest:
        # Member sessions: one opened directly, one from the sign-in form's cookie.
        admin = await tenants.member(tenant, Role.ADMIN)
        secrets["member session"] = admin
        csrf = await sign_in(http, await add_member(context, tenant, Role.OWNER))
        secrets["session cookie"] = http.cookies["mb_session"]

        # The API's answers that carry a secret.
        created = await http.post("/api-keys", headers=bearer(admin), json={"name": "deploy"})
        secrets["API key"] = created.json()["token"]
        hook = await http.post(
            "/webhooks", headers=tenant.headers,
            json={"endpoint": ENDPOINT, "events": ["email.delivered"]},
        )  # fmt: skip
        secrets["webhook secret"] = hook.json()["signing_secret"]
        rotated = await http.post(
            f"/webhooks/{hook.json()['id']}/signing-secret/rotate", headers=tenant.headers
        )
        assert rotated.status_code == 200, rotated.text
        secrets["rotated webhook secret"] = rotated.json()["signing_secret"]
        # A secret in the query string, percent-encoded (+ and / of standard base64).
        await http.get("/webhooks", params={"x": secrets["rotated webhook secret"]},
                       headers=tenant.headers)  # fmt: skip
        invited = await http.post(
            "/members/invitations", headers=bearer(admin),
            json={"email": "new@corp.io", "role": "admin"},
        )  # fmt: skip
        assert invited.status_code == 201, invited.text
        invitation = invited.json()["url"]
        secrets["invitation"] = token_of(invitation)

        # The same through the dashboard's pages (the page calls the API as the member).
        page = await http.post(
            "/dashboard/api-keys",
            data={"csrf": csrf, "name": "from the page", "permission": "full_access"},
        )
        shown = re.search(r"mb_[A-Za-z0-9]+_[A-Za-z0-9]+", page.text)
        assert page.status_code == 201 and shown is not None
        secrets["API key from the dashboard"] = shown.group(0)
        page = await http.post(
            "/dashboard/members/invitations",
            data={"csrf": csrf, "email": "boss@corp.io", "role": "owner"},
        )
        link = re.search(r"/dashboard/invitations/([A-Za-z0-9_-]+)", page.text)
        assert page.status_code == 201 and link is not None
        secrets["owner invitation from the dashboard"] = link.group(1)

        # Signed links in answers: sent attachments, received mail and its attachments.
        email = await add_email(
            context, tenant.team_id, attachments=[AttachmentRow("r.pdf", content=b"%PDF-1.4")]
        )
        listed = await http.get(f"/emails/{email.id}/attachments", headers=tenant.headers)
        attachment = listed.json()["data"][0]
        one = await http.get(
            f"/emails/{email.id}/attachments/{attachment['id']}", headers=tenant.headers
        )
        received_id = await add_received(context, tenant.team_id)
        found = await http.get(f"/emails/receiving/{received_id}", headers=tenant.headers)
        received_files = await http.get(
            f"/emails/receiving/{received_id}/attachments", headers=tenant.headers
        )
        shared = await http.post(f"/emails/{email.id}/share", headers=tenant.headers)
        assert shared.status_code == 201, shared.text
        links = {
            "share link": shared.json()["url"],
            "download link": attachment["download_url"],
            "download link of one attachment": one.json()["download_url"],
            "received email link": found.json()["raw_url"],
            "received attachment link": found.json()["attachments"][0]["download_url"],
            "received attachment link, listed": received_files.json()["data"][0]["download_url"],
        }
        # Links in sent mail, opened by recipients.
        instance = await instance_secret(context.database, context.settings)
        links |= {
            "open pixel": tracking.open_pixel_url(base, instance, email.id),
            "click link": tracking.click_url(base, instance, email.id, "https://shop.io/x"),
            "unsubscribe link": tracking.unsubscribe_url(base, instance, email.id),
            "vote link": vote_url(
                base, instance, str(uuid.uuid4()), tenant.team_id, 0, Voter.of(None, "a@b.io")
            ),
        }
        for what, url in links.items():
            secrets[what] = token_of(url)
            assert (await guest.get(path_of(url))).status_code < 500, what
        assert (await guest.get(path_of(links["download link"]))).content == b"%PDF-1.4"
        assert (await guest.get(path_of(links["received email link"]))).status_code == 200
        await guest.post(path_of(links["unsubscribe link"]))  # one-click unsubscribe

        # The invitee opens the link and joins: a session of their own.
        form = await guest.get(path_of(invitation))
        joined = await guest.post(
            path_of(invitation),
            data={"csrf": csrf_of(form), "email": "new@corp.io", "password": PASSWORD},
        )
        assert joined.status_code == 303, joined.text[:3000]
        secrets["invitee's session"] = guest.cookies["mb_session"]

        # A client that puts its key in the query string.
        await http.get("/api-keys", params={"api_key": secrets["API key"]}, headers=tenant.headers)

        request_log = await request_log_text(http, context, tenant)
    access = served.json_lines.getvalue() + served.text_lines.getvalue()

    assert len(secrets) == 19 and all(len(secret) >= 20 for secret in secrets.values())
    leaked = {what for what, secret in secrets.items() if secret in request_log}
    assert not leaked, f"in the request log: {sorted(leaked)}"
    leaked = {what for what, secret in secrets.items() if secret in access}
    assert not leaked, f"in the access log: {sorted(leaked)}"

    # The log kept what it is for: the requests, with the secrets' places marked.
    assert f"/dashboard/invitations/{MASKED}" in request_log
    assert f'"token":"{MASKED}"' in request_log and f'"signing_secret":"{MASKED}"' in request_log
    assert f'"download_url":"{MASKED}"' in request_log and f'"raw_url":"{MASKED}"' in request_log
    assert f"api_key={MASKED}" in request_log
    paths = {line["path"] for line in served.access_lines()}
    for kind in ("/t/a/", "/t/r/", "/t/ra/", "/t/o/", "/t/c/", "/t/u/", "/polls/vote/", "/share/"):
        assert kind + MASKED in paths, kind
    assert f"/dashboard/invitations/{MASKED}" in paths
    assert any(path.startswith("/logs/") for path in paths)  # the lines are there at all
