"""Command pipelining (RFC 2920) against a scripted relay on loopback.

The relay advertises PIPELINING and answers a group of commands only once it has read
all of it, up to ``DATA``: a client waiting for each reply before its next command
would never get one (the relay's timeout would end the test). Its replies go out in
one write or one at a time, as told; it records each group as it arrived and every
message it took. The provider is driven as the delivery journal drives it: prepare,
complete after the commit, outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import cast

import pytest
import uvloop

from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.mail.providers.base import (
    Accepted,
    Delivery,
    Outcome,
    PermanentFailure,
    TemporaryFailure,
)
from mailbridge.mail.providers.smtp_handover import SmtpHandover
from mailbridge.mail.providers.smtp_pipelining import exchange
from tests.smtp_listener import Received, server_tls_context, smtp_listener

MESSAGE = b"From: shop@shop.io\r\nTo: ann@corp.io\r\nSubject: Hi\r\n\r\nHello\r\n.dot\r\n"
ANN, BOB = "ann@corp.io", "bob@corp.io"
GROUP_ENDS = (b"DATA", b"RSET", b"NOOP", b"QUIT")


@dataclass
class Relay:
    """What the scripted relay saw."""

    port: int
    answers: dict[bytes, bytes] = field(default_factory=dict)  # verb or line → reply
    one_reply_a_write: bool = False
    group_ends: tuple[bytes, ...] = GROUP_ENDS  # the commands that end a group
    sessions: int = 0
    groups: list[list[bytes]] = field(default_factory=list)
    messages: list[bytes] = field(default_factory=list)
    unterminated: int = 0  # sessions that ended in the middle of content

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}?timeout=5"

    def reply(self, line: bytes) -> bytes:
        for key in (line, line.split(b":")[0], line[:4]):
            if key in self.answers:
                return self.answers[key]
        return b"354 go ahead" if line == b"DATA" else b"250 OK"

    async def session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.sessions += 1
        try:
            writer.write(b"220 relay ready\r\n")
            await reader.readline()  # EHLO
            writer.write(b"250-relay\r\n250-PIPELINING\r\n250 SIZE 1000000\r\n")
            while await self._group(reader, writer):
                pass
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _group(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        group: list[bytes] = []
        while not group or not group[-1].startswith(self.group_ends):
            line = await reader.readline()
            if not line:
                return False
            group.append(line.rstrip(b"\r\n"))
        self.groups.append(group)
        replies = [self.reply(line) + b"\r\n" for line in group]
        if self.one_reply_a_write:
            for reply in replies:
                writer.write(reply)
                await writer.drain()
                await asyncio.sleep(0.01)
        else:
            writer.write(b"".join(replies))
        if group[-1] == b"QUIT":
            return False
        if group[-1] == b"DATA" and replies[-1].startswith(b"354"):
            content = b""
            while not content.endswith(b"\r\n.\r\n"):
                line = await reader.readline()
                if not line:
                    self.unterminated += 1
                    return False
                content += line
            self.messages.append(content)
            writer.write(b"250 2.0.0 queued\r\n")
        return True


@pytest.fixture
async def relay() -> AsyncIterator[Relay]:
    running = Relay(port=0)
    server = await asyncio.start_server(running.session, "127.0.0.1", 0)
    running.port = server.sockets[0].getsockname()[1]
    async with server:
        yield running
        server.close()


@pytest.fixture
async def provider(relay: Relay) -> AsyncIterator[SmtpProvider]:
    running = SmtpProvider(SmtpRelay.from_url(relay.url), pool_size=1)
    try:
        yield running
    finally:
        await running.close()


async def deliver(provider: SmtpProvider, *recipients: str, email_id: str = "e1") -> Outcome:
    delivery = Delivery(email_id, "bounce@shop.io", recipients, "me")
    handover = await provider.prepare(delivery, MESSAGE)
    if not isinstance(handover, SmtpHandover):
        return cast(Outcome, handover)
    handover.complete()
    return await handover.outcome()


async def test_the_envelope_and_data_go_together_and_are_answered_together(
    relay: Relay, provider: SmtpProvider
) -> None:
    outcome = await deliver(provider, ANN, BOB)
    second = await deliver(provider, ANN, email_id="e2")
    assert isinstance(outcome, Accepted) and outcome.confirmed and not outcome.rejected
    assert isinstance(second, Accepted)
    assert relay.groups[:2] == [
        [b"MAIL FROM:<bounce@shop.io> SIZE=%d" % len(MESSAGE.replace(b"\n.", b"\n..")),
         b"RCPT TO:<ann@corp.io>", b"RCPT TO:<bob@corp.io>", b"DATA"],
        [b"MAIL FROM:<bounce@shop.io> SIZE=%d" % len(MESSAGE.replace(b"\n.", b"\n..")),
         b"RCPT TO:<ann@corp.io>", b"DATA"],
    ]  # fmt: skip
    assert relay.messages == [MESSAGE.replace(b"\n.", b"\n..") + b".\r\n"] * 2  # dot-stuffed
    assert relay.sessions == 1


async def test_replies_arriving_one_at_a_time(relay: Relay, provider: SmtpProvider) -> None:
    relay.one_reply_a_write = True
    relay.answers[b"RCPT TO"] = b"250-first line\r\n250 2.1.5 recipient ok"  # multi-line
    outcome = await deliver(provider, ANN, BOB)
    assert isinstance(outcome, Accepted) and not outcome.rejected
    assert len(relay.messages) == 1


async def test_a_refused_recipient_among_several(relay: Relay, provider: SmtpProvider) -> None:
    relay.answers[b"RCPT TO:<bob@corp.io>"] = b"550 5.1.1 no such user"
    outcome = await deliver(provider, ANN, BOB)
    assert isinstance(outcome, Accepted)
    assert outcome.rejected == {BOB: "550 5.1.1 no such user"}
    assert len(relay.messages) == 1


async def test_no_recipient_accepted_and_data_refused(relay: Relay, provider: SmtpProvider) -> None:
    relay.answers[b"RCPT"] = b"550 5.1.1 no such user"
    relay.answers[b"DATA"] = b"554 5.5.1 no valid recipients"
    outcome = await deliver(provider, ANN, BOB)
    del relay.answers[b"RCPT"], relay.answers[b"DATA"]
    after = await deliver(provider, ANN, email_id="e2")
    assert isinstance(outcome, PermanentFailure)
    assert outcome.recipients == (ANN, BOB)
    assert "RCPT TO refused" in outcome.reason
    # The same connection, reset before its next transaction.
    assert isinstance(after, Accepted)
    assert relay.sessions == 1 and relay.groups[1] == [b"RSET"]
    assert len(relay.messages) == 1


async def test_a_deferred_recipient_when_the_relay_still_takes_data(
    relay: Relay, provider: SmtpProvider
) -> None:
    # Not what RFC 2920 asks of a relay, but it may: 354 though a recipient is deferred.
    # The content must not go; closing the connection takes the transaction back.
    relay.answers[b"RCPT TO:<bob@corp.io>"] = b"451 4.3.0 try later"
    outcome = await deliver(provider, ANN, BOB)
    async with asyncio.timeout(30):
        while not relay.unterminated:
            await asyncio.sleep(0.01)
    del relay.answers[b"RCPT TO:<bob@corp.io>"]
    after = await deliver(provider, ANN, BOB, email_id="e2")
    assert isinstance(outcome, TemporaryFailure)
    assert "RCPT TO deferred: bob@corp.io: 451 4.3.0 try later" in outcome.reason
    assert relay.unterminated == 1
    assert isinstance(after, Accepted)
    assert relay.sessions == 2 and len(relay.messages) == 1


async def test_a_refused_sender(relay: Relay, provider: SmtpProvider) -> None:
    relay.answers[b"MAIL"] = b"451 4.7.1 slow down"
    relay.answers[b"RCPT"] = b"503 5.5.1 need MAIL first"
    relay.answers[b"DATA"] = b"503 5.5.1 need RCPT first"
    outcome = await deliver(provider, ANN)
    assert isinstance(outcome, TemporaryFailure)
    assert outcome.reason == "MAIL FROM refused: 451 4.7.1 slow down"
    assert relay.messages == []


async def test_a_malformed_reply_fails_the_connection_not_the_runner(
    relay: Relay, provider: SmtpProvider
) -> None:
    relay.answers[b"RCPT"] = b"hello there"
    outcome = await deliver(provider, ANN)
    del relay.answers[b"RCPT"]
    after = await deliver(provider, ANN, email_id="e2")
    assert isinstance(outcome, TemporaryFailure)
    assert "Malformed SMTP response line" in outcome.reason
    assert isinstance(after, Accepted)
    assert relay.sessions == 2  # the failed connection was not reused


async def test_a_command_with_a_line_break_is_refused_before_anything_is_written(
    relay: Relay, provider: SmtpProvider
) -> None:
    connection, _ = await provider._acquire()
    with pytest.raises(ValueError, match="control character"):
        await exchange(connection.protocol, [b"MAIL FROM:<a@b.c>", b"RCPT TO:<x>\r\nDATA"])
    provider._release(connection, reusable=True)
    outcome = await deliver(provider, ANN)
    assert isinstance(outcome, Accepted)
    assert relay.groups[0][0].startswith(b"MAIL FROM:<bounce@shop.io>")


def test_over_starttls_on_uvloop_as_under_mailbridge_runner() -> None:
    # The runner's event loop is uvloop; STARTTLS puts an SSL transport between the
    # socket and aiosmtplib, and the replies' reader stands in on that one.
    async def deliver_twice() -> tuple[list[Outcome], list[Received]]:
        with smtp_listener(
            tls_context=server_tls_context(), login=("relay", "s3cret"), pipelining=True
        ) as secure:
            url = f"smtp://relay:s3cret@127.0.0.1:{secure.port}?starttls=true&verify=false"
            provider = SmtpProvider(SmtpRelay.from_url(url), pool_size=1)
            try:
                connection, _ = await provider._acquire()
                assert connection.pipelining
                provider._release(connection, reusable=True)
                outcomes = [await deliver(provider, ANN, email_id=name) for name in ("a", "b")]
            finally:
                await provider.close()
            return outcomes, secure.messages()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        outcomes, received = runner.run(deliver_twice())
    assert all(isinstance(outcome, Accepted) for outcome in outcomes)
    assert [message.tls for message in received] == [True, True]


async def test_pipelining_false_in_the_url_sends_a_command_at_a_time(relay: Relay) -> None:
    # The scripted relay answers only whole groups: one command at a time, it sees
    # each command as a group of its own (RCPT TO alone would never be answered, so it
    # is told to answer each command as it comes).
    relay.group_ends = (b"MAIL", b"RCPT", b"DATA", b"RSET", b"NOOP", b"QUIT")
    provider = SmtpProvider(SmtpRelay.from_url(relay.url + "&pipelining=false"), pool_size=1)
    try:
        outcome = await deliver(provider, ANN, BOB)
    finally:
        await provider.close()
    assert isinstance(outcome, Accepted)
    assert [group[0][:4] for group in relay.groups] == [
        b"MAIL", b"RCPT", b"RCPT", b"DATA", b"QUIT",
    ]  # fmt: skip
    assert all(len(group) == 1 for group in relay.groups)
    assert len(relay.messages) == 1
