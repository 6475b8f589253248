"""The SMTP listener (aiosmtpd) on ``MAILBRIDGE_INBOUND_SMTP``.

RCPT: routed (``_routing``) or ``550 5.1.1``; a team over its quota ``452
4.2.2``. DATA over the spec's 40 MB: ``552``; with a bare LF line end or a line over
1,000 octets, refused naming which (``_smtp``). DATA: stored, then ``250``; a failure
to store is ``451`` (the sender retries), a team gone over its quota meanwhile ``452``.
STARTTLS when ``MAILBRIDGE_INBOUND_TLS_CERT`` and ``_KEY`` are set.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session
from dns.resolver import LRUCache

from mailbridge.errors import DailyQuotaExceeded, MonthlyQuotaExceeded
from mailbridge.services.inbound._parse_worker import start_workers
from mailbridge.services.inbound._receiving import prepare
from mailbridge.services.inbound._routing import Route, Router
from mailbridge.services.inbound._smtp import InboundSMTP
from mailbridge.services.inbound._writer import InboundWriter
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.operations import inbound_message, inbound_recipient

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 40 * 1024 * 1024  # spec §8.1: up to 40 MB of attachments an email


class InboundHandler:
    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.stored = 0
        self.writer = InboundWriter(context)  # one commit for many conversations
        self.router = Router(context)
        self.dns_cache = LRUCache(4096)  # the DMARC and DKIM key lookups, for their TTL

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str,
        rcpt_options: list[str],
    ) -> str:  # fmt: skip
        return inbound_recipient(await self._recipient(envelope, address))

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return inbound_message(await self._data(session, envelope))

    async def _recipient(self, envelope: Envelope, address: str) -> str:
        try:
            found = await self.router.route(address)
            if found is None:
                return "550 5.1.1 No such recipient here"
            if not await self.router.has_room(found.team_id):
                return "452 4.2.2 The recipient's quota is used up; try again later"
        except Exception:
            logger.exception("routing %r failed", address)
            return "451 4.3.0 Temporary failure; try again later"
        routes: list[Route] = envelope.__dict__.setdefault("mailbridge_routes", [])
        routes.append(found)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def _data(self, session: Session, envelope: Envelope) -> str:
        routes: list[Route] = envelope.__dict__.get("mailbridge_routes", [])
        raw = envelope.original_content or envelope.content
        if not routes or not isinstance(raw, bytes):
            return "554 5.5.1 No valid recipients"
        try:
            peer = session.peer[0] if isinstance(session.peer, tuple) else None
            received = await prepare(
                self.context, raw, envelope.rcpt_tos, mail_from=envelope.mail_from or "",
                peer=peer, helo=session.host_name, dns_cache=self.dns_cache,
            )  # fmt: skip
            await self.writer.store(envelope.mail_from or "", routes, received)
        except (DailyQuotaExceeded, MonthlyQuotaExceeded):
            return "452 4.2.2 The recipient's quota is used up; try again later"
        except Exception:
            logger.exception("storing a received message failed")
            return "451 4.3.0 Temporary failure; try again later"
        self.stored += 1
        self.context.work_added("activity")
        return "250 2.0.0 Stored"


def _tls_context(context: ServiceContext) -> ssl.SSLContext | None:
    settings = context.settings
    if not (settings.inbound_tls_cert and settings.inbound_tls_key):
        return None
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(settings.inbound_tls_cert, settings.inbound_tls_key)
    return tls


def parse_listen_address(value: str) -> tuple[str, int] | None:
    """``host:port`` (or ``off``): where the listener listens; None when off."""
    if value.strip().lower() == "off":
        return None
    host, _, port = value.rpartition(":")
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"MAILBRIDGE_INBOUND_SMTP must be host:port or off, not {value!r}")
    return host.strip("[]"), int(port)


async def start_listener(
    context: ServiceContext, host: str | None = None, port: int | None = None, *,
    sock: socket.socket | None = None,
) -> tuple[asyncio.Server, InboundHandler]:  # fmt: skip
    """Listen on ``host:port``, or on ``sock`` (one several processes share)."""
    # aiosmtpd logs every SMTP command at INFO: costly for the listener under load,
    # and what mailbridge logs per message says more. Its lines come back at debug.
    if context.settings.log_level.lower() != "debug":
        logging.getLogger("mail.log").setLevel(logging.WARNING)
    handler = InboundHandler(context)
    tls = _tls_context(context)
    start_workers()  # the parse workers (``_parse_worker``), before the first big message
    # Left to aiosmtpd, the name would be looked up (socket.getfqdn) on the loop for every
    # connection: once, here, off the loop.
    hostname = context.settings.inbound_hostname or await asyncio.to_thread(socket.getfqdn)

    def protocol() -> Any:
        return InboundSMTP(
            handler, data_size_limit=MAX_MESSAGE_BYTES, enable_SMTPUTF8=True,
            hostname=hostname, tls_context=tls, decode_data=False,
        )  # fmt: skip

    loop = asyncio.get_running_loop()
    if sock is not None:
        server = await loop.create_server(protocol, sock=sock)
    else:
        server = await loop.create_server(protocol, host, port or 0)
    logger.info("receiving mail on %s", server.sockets[0].getsockname() if server.sockets else "?")
    return server, handler
