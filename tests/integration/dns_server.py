"""A real DNS server on loopback for tests: UDP and TCP on one free port of 127.0.0.1.

Answers come from a :class:`Zone` the test fills (``zone.publish(domain, records)``
takes the records exactly as the API returns them). Every query is logged, a name
can be made to fail with SERVFAIL, and UDP answers too big for the client are
truncated so that the resolver retries over TCP, as against a real server.

``DnsServer`` runs on the caller's event loop (integration tests);
``ThreadedDnsServer`` runs one in a thread of its own (acceptance tests are sync).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from typing import Any, cast

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

TTL = 60
TXT_CHUNK = 255  # one character-string holds at most 255 bytes
UDP_DEFAULT_LIMIT = 512


def _key(name: str) -> str:
    return name.rstrip(".").lower()


def _quoted_chunks(value: str) -> str:
    chunks = [value[i : i + TXT_CHUNK] for i in range(0, len(value), TXT_CHUNK)] or [""]
    return " ".join('"' + chunk.replace("\\", "\\\\").replace('"', '\\"') + '"' for chunk in chunks)


class Zone:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rrsets: dict[tuple[str, str], list[str]] = {}
        self._failing: set[str] = set()
        self.queries: list[tuple[str, str]] = []

    def add(self, name: str, rdtype: str, *values: str) -> None:
        """Add records in zone-file text, e.g. ``add("x.io", "MX", "10 mx.x.io.")``."""
        with self._lock:
            self._rrsets.setdefault((_key(name), rdtype.upper()), []).extend(values)

    def add_txt(self, name: str, value: str) -> None:
        self.add(name, "TXT", _quoted_chunks(value))

    def remove(self, name: str, rdtype: str | None = None) -> None:
        with self._lock:
            for key in [k for k in self._rrsets if k[0] == _key(name)]:
                if rdtype is None or key[1] == rdtype.upper():
                    del self._rrsets[key]

    def fail(self, name: str) -> None:
        """Answer every query for ``name`` with SERVFAIL."""
        with self._lock:
            self._failing.add(_key(name))

    def clear(self) -> None:
        with self._lock:
            self._rrsets.clear()
            self._failing.clear()

    def publish(self, domain: str, records: list[dict[str, Any]]) -> None:
        """Publish records as the API shows them (``name`` relative to ``domain``)."""
        for record in records:
            name = f"{record['name']}.{domain}"
            if record["type"] == "TXT":
                self.add_txt(name, record["value"])
            elif record["type"] == "MX":
                self.add(name, "MX", f"{record['priority']} {record['value']}.")
            else:
                self.add(name, record["type"], f"{record['value']}.")

    def respond(self, wire: bytes, limit: int | None) -> bytes:
        query = dns.message.from_wire(wire)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = _key(question.name.to_text())
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries.append((name, rdtype))
            values = list(self._rrsets.get((name, rdtype), []))
            exists = any(key[0] == name for key in self._rrsets)
            failing = name in self._failing
        if failing:
            response.set_rcode(dns.rcode.SERVFAIL)
        elif values:
            response.answer.append(
                dns.rrset.from_text_list(question.name, TTL, "IN", rdtype, values)
            )
        elif not exists:
            response.set_rcode(dns.rcode.NXDOMAIN)
        if limit is None:
            return response.to_wire()
        if query.edns >= 0:
            limit = max(limit, query.payload)
        try:
            return response.to_wire(max_size=limit)
        except dns.exception.TooBig:
            truncated = dns.message.make_response(query)
            truncated.flags |= dns.flags.AA | dns.flags.TC
            return truncated.to_wire()


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, zone: Zone) -> None:
        self.zone = zone
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        assert self.transport is not None
        self.transport.sendto(self.zone.respond(data, UDP_DEFAULT_LIMIT), addr)


class DnsServer:
    def __init__(self, zone: Zone | None = None) -> None:
        self.zone = zone or Zone()
        self.port = 0
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @property
    def address(self) -> str:
        """The ``host:port`` for ``MAILBRIDGE_DNS_NAMESERVER``."""
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for _attempt in range(20):
            udp, _protocol = await loop.create_datagram_endpoint(
                lambda: _Udp(self.zone), local_addr=("127.0.0.1", 0)
            )
            port = int(udp.get_extra_info("sockname")[1])
            try:
                self._tcp = await asyncio.start_server(self._serve_tcp, "127.0.0.1", port)
            except OSError:  # the TCP side of that port is taken: try another
                udp.close()
                continue
            self._udp, self.port = udp, port
            return
        raise RuntimeError("no free port for the test DNS server")

    async def stop(self) -> None:
        if self._udp is not None:
            self._udp.close()
        if self._tcp is not None:
            self._tcp.close()
            for writer in self._connections.values():
                writer.close()  # the handler sees EOF and returns
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._tcp.wait_closed()

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        try:
            while True:
                size = struct.unpack("!H", await reader.readexactly(2))[0]
                answer = self.zone.respond(await reader.readexactly(size), None)
                writer.write(struct.pack("!H", len(answer)) + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._connections.pop(task, None)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


class ThreadedDnsServer:
    """A :class:`DnsServer` on its own event loop in a daemon thread."""

    def __init__(self) -> None:
        self.server = DnsServer()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def zone(self) -> Zone:
        return self.server.zone

    @property
    def address(self) -> str:
        return self.server.address

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout=30)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
