"""Inbound mail that is hostile or odd, through the real listener on loopback with the API
on the same event loop (as ``mailbridge serve`` runs them): nesting that once stalled the
loop, a parse past its time limit, forwarded messages and broken boundaries as the API
shows them, and DATA refused for its real cause over a raw socket."""

from __future__ import annotations

import asyncio
import base64
import gc
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiosmtplib
import httpx
import pytest
from sqlalchemy import select

from mailbridge.api.app import create_app
from mailbridge.mail.inbound_reports import parse_report
from mailbridge.services import inbound
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.inbound import _parse_worker
from mailbridge.services.inbound._mime import TOO_DEEP
from mailbridge.services.inbound._parsing import read
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import ReceivedEmail
from tests import mime_samples
from tests.integration.conftest import USER_AGENT, Tenants

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "inbound"
# While 20 messages nested 2,000 deep arrive: the most CPU the event loop may spend between
# two ticks of a 5 ms timer (immune to a busy machine), and how late a tick, or a /health
# answer, may come (wall clock: generous, for a loaded machine). The code before bounded
# parsing spent 1.1 to 5 s of CPU at a stretch (each message parsed on the loop, then its
# report), ticks came 1 to 6 s late, /health up to 8 s; bounded, measured: under 50 ms,
# under 50 ms (0.4 s on a machine busy with other tests), 0.1 to 0.2 s (its queries wait
# behind the stores; 0.8 s on the busy machine). The 100 ms target for /health is
# a wall-clock figure, measured by ``python -m bench.inbound_hostile``, not asserted here.
MAX_BUSY = 0.25
MAX_LATE = 1.0
MAX_HEALTH = 2.0


@dataclass
class Mailbox:
    context: ServiceContext
    client: httpx.AsyncClient
    port: int

    async def rows(self) -> list[ReceivedEmail]:
        async with self.context.database.session() as session:
            found = await session.scalars(select(ReceivedEmail).order_by(ReceivedEmail.subject))
            return list(found.all())

    async def received(self, row: ReceivedEmail) -> dict[str, object]:
        found = await self.client.get(f"/emails/receiving/{row.id}")
        assert found.status_code == 200
        answer: dict[str, object] = found.json()
        return answer


@pytest.fixture
async def mailbox(context: ServiceContext) -> AsyncIterator[Mailbox]:
    # No SPF/DKIM/DMARC lookups: what is under test is reading the message.
    settings = context.settings.model_copy(update={"inbound_authentication": False})
    context = ServiceContext(settings=settings, database=context.database, clock=context.clock)
    tenant = await Tenants(context).create(plan="pro")
    async with context.database.session() as session:
        await create_domain(
            session, context.clock, context.settings, tenant.team_id, "shop.io",
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        await session.commit()
    server, _handler = await inbound.start_listener(context, "127.0.0.1", 0)
    app = create_app(context=context)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mailbridge.test",
        headers={"User-Agent": USER_AGENT, **tenant.headers},
    )  # fmt: skip
    try:
        async with app.router.lifespan_context(app), client:
            yield Mailbox(context, client, server.sockets[0].getsockname()[1])
    finally:
        server.close()


async def send(mailbox: Mailbox, raw: bytes) -> None:
    await aiosmtplib.send(
        raw, hostname="127.0.0.1", port=mailbox.port, sender="ann@corp.io",
        recipients=["hello@shop.io"], timeout=120,
    )  # fmt: skip


async def test_messages_nested_2000_deep_are_stored_without_stalling_the_loop(
    mailbox: Mailbox,
) -> None:
    loop = asyncio.get_running_loop()
    stalls: list[float] = []
    busy: list[float] = []
    health: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            started, cpu = loop.time(), time.thread_time()
            await asyncio.sleep(0.005)
            stalls.append(loop.time() - started - 0.005)  # how late a 5 ms sleep woke up
            busy.append(time.thread_time() - cpu)  # the loop's own work meanwhile

    async def poll_health() -> None:
        while not done.is_set():
            started = loop.time()
            answer = await mailbox.client.get("/health")
            health.append(loop.time() - started)
            assert answer.status_code == 200
            await asyncio.sleep(0.01)

    assert (await mailbox.client.get("/health")).status_code == 200  # its pool warmed up
    messages = [mime_samples.nested(2000, f"deep {n:02}") for n in range(20)]
    # What the test process heaped up in the tests before this one is not this test's
    # subject: a full collection of it on the loop's thread (seen once in a whole-suite
    # run: 0.87 s) would be counted as a stall. Out of the collector's sight meanwhile.
    gc.collect()
    gc.freeze()
    watchers = [asyncio.create_task(ticker()), asyncio.create_task(poll_health())]
    try:
        await asyncio.gather(*(send(mailbox, raw) for raw in messages))  # each: 250 or raise
    finally:
        done.set()
        await asyncio.gather(*watchers)
        gc.unfreeze()

    rows = await mailbox.rows()
    assert [row.subject for row in rows] == [f"deep {n:02}" for n in range(20)]
    assert {row.parse_error for row in rows} == {TOO_DEEP}
    assert {row.from_address for row in rows} == {"Ann <ann@corp.io>"}
    figures = f"busy {max(busy):.3f} s, late {max(stalls):.3f} s, /health {max(health):.3f} s"
    assert len(health) > 2 and len(stalls) > 20, figures
    assert max(busy) < MAX_BUSY and max(stalls) < MAX_LATE, figures
    assert max(health) < MAX_HEALTH, figures


async def test_a_parse_past_its_time_limit_is_stored_with_its_headers(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ~4 s of parsing (within the depth and part limits) against a quarter of a second.
    monkeypatch.setattr(_parse_worker, "PARSE_TIMEOUT", 0.25)
    await send(mailbox, mime_samples.slow("too slow"))
    [row] = await mailbox.rows()
    view = await mailbox.received(row)
    assert (view["parse_error"], view["subject"], view["to"]) == (
        _parse_worker.TIMED_OUT, "too slow", ["hello@shop.io"],
    )  # fmt: skip
    assert view["text"] is None and view["size"] == len(mime_samples.slow("too slow"))
    # The worker was killed; the next message gets a new one.
    await send(mailbox, mime_samples.nested(150, "after"))
    assert {row.parse_error for row in await mailbox.rows()} == {_parse_worker.TIMED_OUT, TOO_DEEP}


async def test_a_forwarded_message_is_listed_as_one_attachment_as_sent(mailbox: Mailbox) -> None:
    await send(mailbox, mime_samples.forwarded())
    [row] = await mailbox.rows()
    view = await mailbox.received(row)
    assert view["text"] == "outer words" and view["html"] is None
    assert view["parse_error"] is None
    listed = await mailbox.client.get(
        f"/emails/receiving/{row.id}/attachments", params={"content": "true"}
    )
    [attachment] = listed.json()["data"]
    assert (attachment["filename"], attachment["content_type"]) == (
        "Quote Q3 Q4 final v2.eml", "message/rfc822",
    )  # fmt: skip
    assert base64.b64decode(attachment["content"]) == mime_samples.INNER


async def test_a_broken_boundary_is_named_and_its_text_kept(mailbox: Mailbox) -> None:
    raw = (
        mime_samples.headers("broken")
        + b'Content-Type: multipart/mixed; boundary="never"\r\n\r\nThe words are here.\r\n'
    )
    await send(mailbox, raw)
    [row] = await mailbox.rows()
    view = await mailbox.received(row)
    assert view["text"] == "The words are here.\r\n"
    assert str(view["parse_error"]).startswith("StartBoundaryNotFoundDefect")


@pytest.mark.parametrize("name", sorted(path.name for path in CORPUS.glob("*.eml")))
async def test_a_worker_reads_what_the_event_loop_reads(name: str) -> None:
    raw, recipients = (CORPUS / name).read_bytes(), ["bounces+x@mail.shop.io"]
    pool = _parse_worker._the_pool()
    parsed, report = await asyncio.get_running_loop().run_in_executor(
        pool.threads, pool.read, raw, recipients, 30.0
    )
    here, here_report = read(raw, recipients)
    assert report == here_report == parse_report(raw, recipients, here.message)
    assert parsed.message is not None and here.message is not None
    assert parsed.message.items() == here.message.items()
    parsed.message = here.message  # the tree stays in the worker; its headers come back
    assert parsed == here


async def converse(port: int, data: bytes) -> list[str]:
    """A raw SMTP conversation sending ``data`` after DATA; the replies from DATA's on."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def reply() -> str:
        lines = [await reader.readline()]
        while lines[-1][3:4] == b"-":
            lines.append(await reader.readline())
        return b"".join(lines).decode()

    try:
        await reply()  # the greeting
        for command in (b"EHLO corp.io", b"MAIL FROM:<ann@corp.io>", b"RCPT TO:<hello@shop.io>"):
            writer.write(command + b"\r\n")
            assert (await reply()).startswith("250")
        writer.write(b"DATA\r\n" + data + b"QUIT\r\n")
        replies = [await reply()]
        while not replies[-1].startswith("221"):
            replies.append(await reply())
        return replies
    finally:
        writer.close()
        await writer.wait_closed()


async def test_a_bare_lf_is_refused_by_its_name_not_as_a_long_line(mailbox: Mailbox) -> None:
    # Short lines ending in LF alone: aiosmtpd saw one long line and said so.
    data = mime_samples.headers("bare").replace(b"\r\n", b"\n") + b"\n" + b"a short line\n" * 200
    replies = await converse(mailbox.port, data + b"\r\n.\r\n")
    assert replies[0].startswith("354")
    assert replies[1].startswith("550 5.5.2 Bare LF") and "2.3.8" in replies[1]
    assert await mailbox.rows() == []


async def test_a_bare_lf_dot_never_ends_the_data(mailbox: Mailbox) -> None:
    smuggled = (
        mime_samples.headers("first") + b"\r\nhello\n.\n"
        b"MAIL FROM:<ceo@bank.example>\r\nRCPT TO:<hello@shop.io>\r\nDATA\r\n"
        + mime_samples.headers("smuggled") + b"\r\nsend money\r\n.\r\n"
    )  # fmt: skip
    replies = await converse(mailbox.port, smuggled)
    # One message, refused once at the real <CRLF>.<CRLF>: no MAIL, RCPT or DATA inside ran.
    assert [reply[:3] for reply in replies] == ["354", "550", "221"]
    assert await mailbox.rows() == []


async def test_a_line_over_1000_octets_is_refused_as_too_long(mailbox: Mailbox) -> None:
    data = mime_samples.headers("long") + b"\r\n" + b"x" * 1200 + b"\r\nshort\r\n.\r\n"
    replies = await converse(mailbox.port, data)
    assert replies[1].startswith("500 5.5.2 Line too long") and "4.5.3.1.6" in replies[1]
    assert await mailbox.rows() == []
    # A line of 1,000 octets with its CRLF is fine.
    fine = mime_samples.headers("fine") + b"\r\n" + b"x" * 998 + b"\r\n.\r\n"
    assert (await converse(mailbox.port, fine))[1].startswith("250")
    assert [row.subject for row in await mailbox.rows()] == ["fine"]
