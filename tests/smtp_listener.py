"""A real SMTP listener on loopback (aiosmtpd, in a thread of its own) that records
what it receives and can be told to refuse.

Every tier uses it: integration tests point the SMTP provider at it, the acceptance
test points a runner process at it, the benchmark uses it as the sink.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes  # exactly as received (dot-unstuffed, CRLF)
    tls: bool = False

    @property
    def message_id(self) -> str:
        return str(BytesHeaderParser().parsebytes(self.content).get("Message-ID", ""))

    def header(self, name: str) -> str | None:
        value = BytesHeaderParser().parsebytes(self.content).get(name)
        return None if value is None else str(value)


class RecordingHandler:
    """Answers 250 and records, unless a refusal was queued for the next RCPT or DATA."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[Received] = []
        self.rcpt_replies: dict[str, collections.deque[str]] = {}
        self.data_replies: collections.deque[str] = collections.deque()
        self.transactions = 0
        self.transactions_started = 0
        self.quits = 0  # QUIT commands: a client that says goodbye
        self.data_delay = 0.0  # seconds to wait before answering the end of data
        # Advertise PIPELINING (RFC 2920): aiosmtpd reads commands in order, a line at a
        # time, so it takes a pipelined group as any relay does.
        self.pipelining = False

    async def handle_QUIT(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            self.quits += 1
        return "221 Bye"

    async def handle_EHLO(
        self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname  # what aiosmtpd does itself when there is no hook
        if self.pipelining:
            responses.insert(-1, "250-PIPELINING")
        return responses

    def refuse_rcpt(self, address: str, *replies: str) -> None:
        with self.lock:
            self.rcpt_replies.setdefault(address.lower(), collections.deque()).extend(replies)

    def refuse_data(self, *replies: str) -> None:
        with self.lock:
            self.data_replies.extend(replies)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        with self.lock:
            queued = self.rcpt_replies.get(address.lower())
            if queued:
                return queued.popleft()
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        # The message is the relay's once its terminator arrived, as a real MTA's is: it
        # is kept before the delay (the work before the answer), so a client killed while
        # waiting for the answer — its connection gone, this handler cancelled — has
        # still delivered it.
        with self.lock:
            self.transactions_started += 1
            reply = self.data_replies.popleft() if self.data_replies else None
            if reply is None:
                self.received.append(
                    Received(
                        envelope.mail_from,
                        list(envelope.rcpt_tos),
                        envelope.original_content,
                        tls=session.ssl is not None,
                    )
                )
        if self.data_delay:
            await asyncio.sleep(self.data_delay)
        with self.lock:
            self.transactions += 1
        return reply or "250 2.0.0 OK queued"

    def messages(self) -> list[Received]:
        with self.lock:
            return list(self.received)


class CompletingSMTP(SMTP):
    """aiosmtpd's session, finishing what the client sent before it went away.

    Stock aiosmtpd cancels the session the moment the client's FIN arrives, even when
    a complete message — terminating ``.`` included — is still unread in its buffer,
    and so drops it. A real MTA reads its input in order and takes that message. The
    exactly-once test needs the real behaviour: a client killed right after writing
    the terminator has delivered the message.
    """

    def eof_received(self) -> bool | None:
        self._reader.feed_eof()
        return True  # keep the transport until the session has read everything

    async def handle_exception(self, error: Exception) -> str:
        if isinstance(error, asyncio.IncompleteReadError):
            # Read past the end of what the client sent: now the session is over.
            if self.transport is not None:
                self.transport.close()
            raise asyncio.CancelledError
        status: str = await super().handle_exception(error)
        return status


class CompletingController(Controller):
    def factory(self) -> SMTP:
        return CompletingSMTP(self.handler, **self.SMTP_kwargs)


def write_self_signed(directory: Path) -> tuple[Path, Path]:
    """A fresh self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sink.test")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = Path(directory, "cert.pem"), Path(directory, "key.pem")
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def server_tls_context() -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for 127.0.0.1."""
    with tempfile.TemporaryDirectory() as directory:
        cert_path, key_path = write_self_signed(Path(directory))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
    return context


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Authenticator:
    def __init__(self, username: str, password: str) -> None:
        self.username = username.encode()
        self.password = password.encode()
        self.logins: list[bytes] = []

    def __call__(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        ok = data.login == self.username and data.password == self.password
        if ok:
            self.logins.append(data.login)
        return AuthResult(success=ok, handled=False)


@dataclass
class Listener:
    handler: RecordingHandler
    port: int
    authenticator: _Authenticator | None = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def messages(self) -> list[Received]:
        return self.handler.messages()


@contextmanager
def smtp_listener(
    *,
    port: int | None = None,
    tls_context: ssl.SSLContext | None = None,
    login: tuple[str, str] | None = None,
    pipelining: bool = False,
) -> Iterator[Listener]:
    """A listener on loopback (a free port unless given); ``tls_context`` requires
    STARTTLS, ``login`` requires AUTH with that user and password (over TLS),
    ``pipelining`` advertises PIPELINING."""
    handler = RecordingHandler()
    handler.pipelining = pipelining
    port = port or free_port()
    authenticator = _Authenticator(*login) if login else None
    kwargs: dict[str, Any] = {}
    if tls_context is not None:
        kwargs.update(tls_context=tls_context, require_starttls=True)
    if authenticator is not None:
        kwargs.update(authenticator=authenticator, auth_required=True, auth_require_tls=True)
    controller = CompletingController(
        handler,
        hostname="127.0.0.1",
        port=port,
        server_hostname="sink.test",
        data_size_limit=0,
        **kwargs,
    )
    controller.start()
    try:
        yield Listener(handler, port, authenticator)
    finally:
        controller.stop()
