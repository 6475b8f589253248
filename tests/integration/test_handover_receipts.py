"""The receipt of a handover is filed before its terminator is written, and withdrawn
when the terminator did not leave this process: a runner killed at any instant after
the write — descheduled there, as the relay it woke takes the CPU — has its receipt.

Against a real SMTP listener on loopback; the provider is driven directly, as the
delivery journal drives it (prepare, then complete after the commit, then outcome).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import aiosmtplib
import pytest
from aiosmtplib.protocol import SMTPProtocol

from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.mail.providers.base import Accepted, Delivery, TemporaryFailure
from mailbridge.mail.providers.receipts import receipt_filed
from mailbridge.mail.providers.smtp import HELD_CONTENT, data_content
from mailbridge.mail.providers.smtp_handover import SmtpHandover
from tests.smtp_listener import Listener, smtp_listener

MESSAGE = (
    b"From: shop@shop.io\r\nTo: ann@corp.io\r\nSubject: Hello\r\n"
    b"Message-ID: <receipt-test@shop.io>\r\n\r\nHello Ann\r\n"
)
DELIVERY = Delivery("email-1", "bounces@shop.io", ("ann@corp.io",), "me", 1)


@pytest.fixture
def listener() -> Iterator[Listener]:
    with smtp_listener() as running:
        yield running


def _filed(directory: Path) -> bool | None:
    return receipt_filed(directory, "me", DELIVERY.email_id, DELIVERY.attempt_number)


def _on_terminator(monkeypatch: pytest.MonkeyPatch, action: Callable[[SMTPProtocol], None]) -> None:
    """Runs ``action`` where the terminator is about to be written."""
    original = SMTPProtocol.write

    def write(protocol: SMTPProtocol, data: bytes) -> None:
        if data.endswith(b"\r\n.\r\n") or data == b".\r\n":  # held content, or none
            action(protocol)
        original(protocol, data)

    monkeypatch.setattr(SMTPProtocol, "write", write)


async def _handover(provider: SmtpProvider) -> SmtpHandover:
    handover = await provider.prepare(DELIVERY, MESSAGE)
    assert isinstance(handover, SmtpHandover), handover
    return handover


async def test_the_receipt_is_in_the_book_before_the_terminator_is_written(
    listener: Listener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "handovers"
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)
    seen: list[bool | None] = []
    _on_terminator(monkeypatch, lambda _protocol: seen.append(_filed(directory)))
    try:
        handover = await _handover(provider)
        assert _filed(directory) is False  # nothing filed while it can still be taken back
        handover.complete()
        outcome = await handover.outcome()
    finally:
        await provider.close()

    assert seen == [True]
    assert isinstance(outcome, Accepted) and outcome.confirmed
    assert _filed(directory) is True
    assert [message.message_id for message in listener.messages()] == ["<receipt-test@shop.io>"]


async def test_a_terminator_that_could_not_be_written_withdraws_its_receipt(
    listener: Listener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "handovers"
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)

    def lose_the_connection(_protocol: SMTPProtocol) -> None:
        raise aiosmtplib.SMTPServerDisconnected("Connection lost")

    _on_terminator(monkeypatch, lose_the_connection)
    try:
        handover = await _handover(provider)
        handover.complete()
        outcome = await handover.outcome()
    finally:
        await provider.close()

    assert isinstance(outcome, TemporaryFailure)
    assert _filed(directory) is False  # settled after a kill: sent again, as it must be
    assert listener.messages() == []


async def test_a_terminator_left_in_our_buffer_withdraws_its_receipt(
    listener: Listener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the kernel's buffer is full the terminator waits in the transport's: a kill
    then loses it, so the handover must not count as made."""
    directory = tmp_path / "handovers"
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1, receipts=directory)

    def kernel_buffer_full(protocol: SMTPProtocol) -> None:
        transport = protocol.transport
        assert isinstance(transport, asyncio.WriteTransport)
        size = transport.get_write_buffer_size
        monkeypatch.setattr(transport, "get_write_buffer_size", lambda: size() + 3)

    _on_terminator(monkeypatch, kernel_buffer_full)
    try:
        handover = await _handover(provider)
        handover.complete()
        filed = _filed(directory)
        handover.abandon()
    finally:
        await provider.close()

    assert filed is False


@pytest.mark.parametrize("size", [100, HELD_CONTENT - 1000, HELD_CONTENT + 1000])
async def test_small_content_goes_out_with_its_terminator(
    listener: Listener, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """Up to ``HELD_CONTENT`` the content waits for the commit and leaves in the same
    write as its terminator; larger content leaves first, so that the terminator's
    write stays small enough for the kernel to take at once."""
    message = MESSAGE + (b"x" * 99 + b"\r\n") * (size // 101 + 1)
    written: list[bytes] = []
    original = SMTPProtocol.write

    def write(protocol: SMTPProtocol, data: bytes) -> None:
        written.append(data)
        original(protocol, data)

    monkeypatch.setattr(SMTPProtocol, "write", write)
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
    try:
        handover = await provider.prepare(DELIVERY, message)
        assert isinstance(handover, SmtpHandover)
        before = list(written)
        handover.complete()
        completing = written[len(before) :]  # what complete() wrote
        outcome = await handover.outcome()
    finally:
        await provider.close()

    assert isinstance(outcome, Accepted) and outcome.confirmed
    if len(data_content(message)) <= HELD_CONTENT:
        assert not any(b"Hello Ann" in data for data in before)  # not before the commit
        assert completing == [data_content(message) + b".\r\n"]
    else:
        assert data_content(message) in before
        assert completing == [b".\r\n"]
    [received] = listener.messages()
    assert received.message_id == "<receipt-test@shop.io>"
