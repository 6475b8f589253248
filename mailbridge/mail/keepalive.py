"""A lean HTTP/1.1 transport for httpx: pooled keep-alive connections, nothing else.

Webhook deliveries are thousands of small POSTs a second to a few endpoints. httpx's
default transport (httpcore) spends most of a core on bookkeeping at that rate —
each request scans every pooled connection, probes each socket for readability and,
without ``sniffio``, retries a failed import — and goes slower as concurrency grows.
This transport does only what a webhook sender needs: one asyncio connection per
request in flight, reused while the server keeps it alive, responses parsed by
``httptools`` (llhttp, the parser uvicorn uses). It implements
``httpx.AsyncBaseTransport``, so callers keep httpx's request and response types and
tests inject ``httpx.MockTransport`` instead.

Limits, on purpose: HTTP/1.1 only; no proxies, no redirects (the caller decides);
request bodies are sent whole; a response body is kept up to ``max_body`` bytes and
the connection is dropped past it. Timeouts are the caller's (``asyncio.timeout``
around the call): a cancelled request closes its connection. A request on a reused
connection that the server closed before answering anything is sent once more on a
new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from typing import cast

import httptools
import httpx

MAX_BODY = 64 * 1024
KEEPALIVE_EXPIRY = 5.0  # seconds an idle connection is kept (servers often close at 5 s)

_Origin = tuple[str, str, int, str | None]  # scheme, host, port, TLS server name


class _Closed(Exception):
    """The connection closed before a whole response arrived."""

    def __init__(self, answered: bool) -> None:
        super().__init__("the server closed the connection before answering")
        self.answered = answered  # some of a response had arrived


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection; one request at a time."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser: httptools.HttpResponseParser | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._received = False
        self._headers_done = False
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self._size = 0
        self.keep_alive = False

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports (``mailbridge serve`` runs on uvloop) are not subclasses of
        # asyncio.Transport, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._parser is None:  # nothing was asked: a confused server
            self.close()
            return
        self._received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed response: {exc}"))
            self.close()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and self._parser is not None and not self._parser.should_keep_alive():
            # A body delimited by the end of the connection: this is its end.
            self.keep_alive = False
            self._waiter.set_result(None)
            return
        self._waiter.set_exception(_Closed(self._received))

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        self.status = self._parser.get_status_code()
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        room = self.max_body - self._size
        self._size += len(body)
        if room > 0:
            self.body.append(body[:room])
        if self._size <= self.max_body:
            return
        # Past the limit: keep what we have and drop the connection rather than read on.
        self.keep_alive = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def on_message_complete(self) -> None:
        assert self._parser is not None
        if 100 <= self.status < 200:  # an interim answer (103 Early Hints): wait for the real one
            self.headers, self._headers_done = [], False
            return
        if self._waiter is not None and not self._waiter.done():
            self.keep_alive = self._parser.should_keep_alive()
            self._waiter.set_result(None)

    # requests

    async def exchange(self, head: bytes, body: bytes) -> None:
        """Send one request and wait for its whole response (``status``, ``headers``, ``body``)."""
        assert self.transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter = asyncio.get_running_loop().create_future()
        self._received = self._headers_done = False
        self.status, self.headers, self.body, self._size = 0, [], [], 0
        self.keep_alive = False
        if self.closed:
            raise _Closed(False)
        self.transport.write(head + body if len(body) < 16384 else head)
        if len(body) >= 16384:
            self.transport.write(body)
        try:
            await self._waiter
        finally:
            self._parser = None
            self._waiter = None

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class KeepAliveTransport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        *,
        max_body: int = MAX_BODY,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
        max_idle_per_origin: int = 256,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.max_body = max_body
        self.keepalive_expiry = keepalive_expiry
        self.max_idle_per_origin = max_idle_per_origin
        self._ssl_context = ssl_context
        self._idle: dict[_Origin, deque[_Connection]] = {}
        self._busy: set[_Connection] = set()

    @property
    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not http or https")
        sni = request.extensions.get("sni_hostname")
        port = url.port or (443 if url.scheme == "https" else 80)
        origin: _Origin = (url.scheme, url.host, port, sni if isinstance(sni, str) else None)
        body = await request.aread()
        head = _head(request, body)
        connection, reused = self._take_idle(origin), True
        if connection is None:
            connection, reused = await self._connect(origin, request), False
        try:
            try:
                await connection.exchange(head, body)
            except _Closed as exc:
                if not reused or exc.answered:
                    raise
                # The server had closed the idle connection: once more on a new one.
                connection.close()
                self._busy.discard(connection)
                connection = await self._connect(origin, request)
                await connection.exchange(head, body)
        except _Closed as exc:
            connection.close()
            raise httpx.RemoteProtocolError(str(exc), request=request) from None
        except BaseException:
            connection.close()  # cancelled (a timeout) or broken: never reused
            raise
        finally:
            self._busy.discard(connection)
        response = httpx.Response(
            connection.status,
            headers=connection.headers,
            content=b"".join(connection.body),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )
        if connection.keep_alive and not connection.closed:
            self._put_idle(origin, connection)
        else:
            connection.close()
        return response

    async def _connect(self, origin: _Origin, request: httpx.Request) -> _Connection:
        scheme, host, port, sni = origin
        loop = asyncio.get_running_loop()
        try:
            if scheme == "https":
                _transport, connection = await loop.create_connection(
                    lambda: _Connection(self.max_body),
                    host,
                    port,
                    ssl=self.ssl_context,
                    server_hostname=sni or host,
                )
            else:
                _transport, connection = await loop.create_connection(
                    lambda: _Connection(self.max_body), host, port
                )
        except ssl.SSLError as exc:
            message = f"TLS with {host}:{port} failed: {exc}"
            raise httpx.ConnectError(message, request=request) from exc
        except OSError as exc:
            message = f"cannot connect to {host}:{port}: {exc}"
            raise httpx.ConnectError(message, request=request) from exc
        self._busy.add(connection)
        return connection

    def _take_idle(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()  # the most recently used: the least likely to be stale
            if connection.closed or now - connection.idle_since > self.keepalive_expiry:
                connection.close()
                continue
            self._busy.add(connection)
            return connection
        return None

    def _put_idle(self, origin: _Origin, connection: _Connection) -> None:
        idle = self._idle.setdefault(origin, deque())
        connection.idle_since = time.monotonic()
        idle.append(connection)
        while len(idle) > self.max_idle_per_origin:
            idle.popleft().close()

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        for connection in list(self._busy):
            connection.close()
        self._busy.clear()
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)  # let the transports run their close callbacks


def _head(request: httpx.Request, body: bytes) -> bytes:
    """The request line and headers; Host and Content-Length are always ours to set."""
    url = request.url
    lines = [b"%s %s HTTP/1.1" % (request.method.encode(), url.raw_path or b"/")]
    has_host = False
    for name, value in request.headers.raw:
        lowered = name.lower()
        if lowered in (b"content-length", b"transfer-encoding", b"connection"):
            continue
        if b"\r" in value or b"\n" in value or b"\r" in name or b"\n" in name:
            raise httpx.LocalProtocolError(f"header {name!r} holds a line break", request=request)
        has_host = has_host or lowered == b"host"
        lines.append(name + b": " + value)
    if not has_host:
        lines.append(b"Host: " + url.netloc)
    lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n"
