"""POSTs to checked and pinned targets (``mail.targets``): what a webhook sender needs of HTTP.

A ``Poster`` sends one POST to a ``PinnedTarget`` and says what came back: the status
and the body, kept up to ``MAX_BODY`` bytes. Two of them:

- ``AiohttpPoster``, the one mailbridge sends with: one ``aiohttp.ClientSession`` over
  a keep-alive ``TCPConnector``.
- ``TransportPoster``, around any ``httpx.AsyncBaseTransport``: tests pass
  ``httpx.MockTransport``.

Failures are httpx's exceptions (``ConnectError``, ``RemoteProtocolError``,
``LocalProtocolError``, ``UnsupportedProtocol``), whichever poster sends.

What ``AiohttpPoster`` keeps, and how:

- The request goes where the target's URL says: ``mail.targets.pin`` has put the checked
  address there, and aiohttp connects to an address without resolving anything. The
  name travels in the ``Host`` header and, for https, as the TLS server name (the
  target's ``sni_hostname``), against which the certificate is checked (httpx's
  certificate bundle). aiohttp keys its pool by address, port, TLS settings and server
  name, so a connection made for one name never carries a request for another.
- The headers sent are the caller's, nothing of aiohttp's own (no ``Accept``,
  ``Accept-Encoding``); ``Content-Length`` is aiohttp's. A header holding a line break
  is refused before connecting.
- No redirects followed, no proxies or ``.netrc`` from the environment, no cookies kept
  between requests; a compressed body is decoded, as httpx did.
- A response body is kept up to ``max_body`` bytes; past it the connection is dropped.
- Timeouts are the caller's (``asyncio.timeout`` around the call): a cancelled request
  closes its connection. Idle connections are closed after ``keepalive_expiry`` s.
- A request on a reused connection that the server closed without answering is sent
  again. aiohttp does that by itself only for idempotent methods, and a POST is not
  one; but a server that timed the idle connection out has not seen the request (and
  webhook receivers drop repeats by event id).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Protocol

import aiohttp
import httpx
from aiohttp.client_proto import ResponseHandler
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from yarl import URL

from mailbridge.mail.targets import PinnedTarget

MAX_BODY = 64 * 1024
KEEPALIVE_EXPIRY = 5.0  # seconds an idle connection is kept (servers often close at 5 s)
_CLOSED_EARLY = "the server closed the connection before answering"


class Poster(Protocol):
    async def post(
        self, target: PinnedTarget, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes]:
        """POST ``body`` with ``headers`` (``target.headers`` among them) to ``target``:
        the status and the body of the answer (at most ``MAX_BODY`` bytes)."""
        ...

    async def aclose(self) -> None: ...


class TransportPoster:
    """POSTs through an ``httpx.AsyncBaseTransport`` (tests: ``httpx.MockTransport``)."""

    def __init__(self, transport: httpx.AsyncBaseTransport, *, max_body: int = MAX_BODY) -> None:
        self.transport = transport
        self.max_body = max_body

    async def post(
        self, target: PinnedTarget, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes]:
        request = httpx.Request(
            "POST", target.url, headers=headers, content=body, extensions=target.extensions
        )
        response = await self.transport.handle_async_request(request)
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        return response.status_code, content[: self.max_body]

    async def aclose(self) -> None:
        await self.transport.aclose()


# Whether the connection the current request got had served a request before (set by
# ``_Connector.connect``, which runs in the caller's task).
_reused: ContextVar[bool] = ContextVar("mailbridge_connection_reused", default=False)


class _Connector(aiohttp.TCPConnector):
    """A ``TCPConnector`` that tells whether the connection it hands out is a reused one."""

    def __init__(self, *, limit: int, keepalive_timeout: float) -> None:
        super().__init__(limit=limit, keepalive_timeout=keepalive_timeout)
        self._served: weakref.WeakSet[ResponseHandler] = weakref.WeakSet()

    async def connect(
        self,
        req: aiohttp.ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 (aiohttp's signature)
    ) -> Connection:
        connection = await super().connect(req, traces, timeout)
        protocol = connection.protocol
        if protocol is not None:
            _reused.set(protocol in self._served)
            self._served.add(protocol)
        return connection


class AiohttpPoster:
    def __init__(
        self,
        *,
        max_body: int = MAX_BODY,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.max_body = max_body
        self.keepalive_expiry = keepalive_expiry
        self._ssl_context = ssl_context
        self._session: aiohttp.ClientSession | None = None

    @property
    def ssl_context(self) -> ssl.SSLContext:
        """httpx's (the certifi bundle), made at the first https request."""
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    def _open(self) -> aiohttp.ClientSession:
        # Made in the running loop, at the first request.
        self._session = aiohttp.ClientSession(
            connector=_Connector(
                limit=0,  # the caller bounds the requests in flight
                keepalive_timeout=self.keepalive_expiry,
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(),  # none: the caller's
            skip_auto_headers=("Accept", "Accept-Encoding"),
            trust_env=False,
        )
        return self._session

    async def post(
        self, target: PinnedTarget, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes]:
        url = target.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not http or https")
        for name, value in headers.items():
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise httpx.LocalProtocolError(f"header {name!r} holds a line break")
        session = self._session or self._open()
        https = url.scheme == "https"
        server_name = target.extensions.get("sni_hostname") if https else None
        where = URL(str(url), encoded=True)
        while True:
            _reused.set(False)
            try:
                response = await session.post(
                    where,
                    data=body,
                    headers=headers,
                    allow_redirects=False,
                    ssl=self.ssl_context if https else True,
                    server_hostname=server_name,
                )
                break
            except aiohttp.ClientSSLError as exc:
                raise httpx.ConnectError(f"TLS with {_origin(url)} failed: {exc}") from exc
            except aiohttp.ClientConnectorError as exc:
                message = f"cannot connect to {_origin(url)}: {exc.os_error}"
                raise httpx.ConnectError(message) from exc
            except (
                aiohttp.ServerDisconnectedError,
                aiohttp.ClientOSError,
                aiohttp.ClientConnectionResetError,
            ) as exc:
                # A ServerDisconnectedError carries what had arrived of an answer, if any.
                answered = isinstance(exc, aiohttp.ServerDisconnectedError) and not isinstance(
                    exc.message, str
                )
                if _reused.get() and not answered:
                    continue  # the server had closed the idle connection: on another one
                raise httpx.RemoteProtocolError(_CLOSED_EARLY) from exc
            except aiohttp.ClientResponseError as exc:
                raise httpx.RemoteProtocolError(f"malformed response: {exc.message}") from exc
            except aiohttp.ClientError as exc:
                raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
        return response.status, await self._read(response)

    async def _read(self, response: aiohttp.ClientResponse) -> bytes:
        """The body up to ``max_body`` bytes; past it, the connection is dropped."""
        chunks: list[bytes] = []
        size = 0
        try:
            while size <= self.max_body:
                chunk = await response.content.readany()
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except aiohttp.ClientError as exc:
            response.close()
            raise httpx.RemoteProtocolError(f"the answer broke off: {exc}") from exc
        except BaseException:
            response.close()  # cancelled (a timeout): never reused
            raise
        if size > self.max_body:
            response.close()
            return b"".join(chunks)[: self.max_body]
        response.release()
        return b"".join(chunks)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)  # let the transports run their close callbacks


def _origin(url: httpx.URL) -> str:
    return f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
