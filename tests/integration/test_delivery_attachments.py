"""Attachments at delivery: stored bytes, or a path fetched from a real loopback HTTP server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mailbridge.config import Settings
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Domain
from tests.integration.conftest import Tenants
from tests.integration.email_factory import Attachment, add_domain, add_email, load_email

MB = 1024 * 1024
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


class Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path
        if path == "/logo.png":
            self._send(200, LOGO, "image/png")
        elif path == "/report.pdf":
            self._send(200, b"%PDF-1.7 report", "application/pdf")
        elif path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/report.pdf")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.startswith("/bytes/"):
            size = int(path.rsplit("/", 1)[1])
            self._stream(size, declare=not path.startswith("/bytes/undeclared"))
        elif path.startswith("/undeclared/"):
            self._stream(int(path.rsplit("/", 1)[1]), declare=False)
        elif path == "/slow":
            time.sleep(1.5)
            self._send(200, b"late", "text/plain")
        elif path == "/busy":
            self._send(503, b"busy", "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, size: int, *, declare: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if declare:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < size:
                piece = chunk[: min(len(chunk), size - sent)]
                self.wfile.write(piece)
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading, as it should past the limit

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def files_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def with_private(settings: Settings, **changes: object) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True, **changes})


@pytest.fixture
async def shop(context: ServiceContext) -> Domain:
    tenant = await Tenants(context).create()
    return await add_domain(context, tenant.team_id)


async def deliver(context: ServiceContext) -> None:
    async with DeliveryWorker(context) as worker:
        await worker.deliver_due()


def outbox_message(context: ServiceContext, email_id: str) -> EmailMessage:
    path = context.settings.data_dir / "outbox" / f"{email_id}.eml"
    message = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
    assert isinstance(message, EmailMessage)
    return message


async def test_stored_and_fetched_attachments_inline_and_attached(
    context: ServiceContext, database: Database, shop: Domain, files_url: str
) -> None:
    allowed = ServiceContext(with_private(context.settings), database, context.clock)
    email = await add_email(
        allowed, shop,
        html='<p>Hi <img src="cid:logo"></p>', text="Hi",
        attachments=[
            Attachment("logo.png", path=f"{files_url}/logo.png", content_type="image/png",
                       content_id="logo"),
            Attachment("notes.txt", content=b"stored notes", content_type="text/plain"),
            Attachment("report.pdf", path=f"{files_url}/moved", content_type="application/pdf"),
        ],
    )  # fmt: skip

    await deliver(allowed)

    assert (await load_email(allowed, email.id)).status == "delivered"
    message = outbox_message(allowed, email.id)
    assert message.get_content_type() == "multipart/mixed"
    alternative, notes, report = message.iter_parts()
    assert alternative.get_content_type() == "multipart/alternative"
    text, related = alternative.iter_parts()
    assert text.get_content_type() == "text/plain"
    html, logo = related.iter_parts()
    assert related.get_content_type() == "multipart/related"
    assert html.get_content_type() == "text/html"
    assert logo["Content-ID"] == "<logo>" and logo.get_content_disposition() == "inline"
    assert logo.get_content() == LOGO
    assert notes.get_filename() == "notes.txt" and notes.get_content() == "stored notes"
    assert report.get_content_disposition() == "attachment"
    assert report.get_content() == b"%PDF-1.7 report"  # after the redirect


async def test_private_targets_are_refused_unless_allowed(
    context: ServiceContext, shop: Domain, files_url: str
) -> None:
    email = await add_email(
        context, shop, attachments=[Attachment("logo.png", path=f"{files_url}/logo.png")]
    )

    await deliver(context)

    failed = await load_email(context, email.id)
    assert failed.status == "failed"
    assert failed.last_error is not None
    assert "non-public address 127.0.0.1" in failed.last_error
    assert "logo.png" in failed.last_error


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/missing", "failed", "answered 404"),
        ("/busy", "delivery_delayed", "answered 503"),
        (f"/bytes/{25 * MB + 1}", "failed", "larger than the 25 MB allowed"),
        (f"/undeclared/{25 * MB + 1}", "failed", "larger than the 25 MB allowed"),
        ("/slow", "delivery_delayed", "took longer than 0.5 s"),
    ],
)
async def test_fetch_failures(
    context: ServiceContext,
    database: Database,
    shop: Domain,
    files_url: str,
    path: str,
    status: str,
    error: str,
) -> None:
    # The half-second limit is what "/slow" tests; the other paths get a limit a busy
    # machine never reaches (25 MB streamed takes a moment), so they fail for their own reason.
    timeout = 0.5 if path == "/slow" else 60.0
    settings = with_private(context.settings, attachment_fetch_timeout=timeout)
    allowed = ServiceContext(settings, database, context.clock)
    email = await add_email(allowed, shop, attachments=[Attachment("file", path=files_url + path)])

    await deliver(allowed)

    stored = await load_email(allowed, email.id)
    assert stored.status == status
    assert stored.last_error is not None and error in stored.last_error


async def test_a_file_of_exactly_25_mb_goes(
    context: ServiceContext, database: Database, shop: Domain, files_url: str
) -> None:
    allowed = ServiceContext(with_private(context.settings), database, context.clock)
    email = await add_email(
        allowed, shop, attachments=[Attachment("big.bin", path=f"{files_url}/bytes/{25 * MB}")]
    )
    await deliver(allowed)
    assert (await load_email(allowed, email.id)).status == "delivered"


async def test_all_attachments_of_an_email_stay_within_40_mb(
    context: ServiceContext, database: Database, shop: Domain, files_url: str
) -> None:
    allowed = ServiceContext(with_private(context.settings), database, context.clock)
    email = await add_email(
        allowed, shop,
        attachments=[
            Attachment("stored.bin", content=b"s" * (20 * MB)),
            Attachment("fetched.bin", path=f"{files_url}/bytes/{21 * MB}"),
        ],
    )  # fmt: skip

    await deliver(allowed)

    failed = await load_email(allowed, email.id)
    assert failed.status == "failed"
    assert failed.last_error == "attachment 'fetched.bin': the attachments exceed 40 MB in total"
