"""The aiohttp poster webhooks are sent with, against a scripted HTTP/1.1 server on
loopback: connection reuse, the framings a response may use, interim answers, oversized
bodies, servers that close idle connections, cancelled requests; the headers sent, and
over TLS the pinned address with the name kept for SNI and the certificate check."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvloop
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mailbridge.mail.http_post import AiohttpPoster
from mailbridge.mail.targets import PinnedTarget, pin


class Script:
    """An HTTP/1.1 server answering by path; counts connections and requests."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {
                    name.lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((path, headers, body))
                served += 1
                if not await self.answer(path, served, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def answer(self, path: str, served: int, writer: asyncio.StreamWriter) -> bool:
        """Write the answer; False closes the connection."""
        if path == "/ok":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path == "/chunked":
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
        elif path == "/until-close":
            writer.write(b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\nthe whole story")
            await writer.drain()
            return False
        elif path == "/early-hints":
            writer.write(
                b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                b"HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone"
            )
        elif path == "/big":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + b"x" * 300000)
        elif path == "/close-after":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            await writer.drain()
            return False
        elif path == "/drop-reused":
            if served > 1:  # as a server does with a connection it already timed out
                return False
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path == "/drop":
            return False  # closes a fresh connection without answering
        elif path == "/slow":
            await asyncio.sleep(2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path == "/garbage":
            writer.write(b"SMTP/9 hello there\r\n\r\n")
        elif path == "/cookie":
            writer.write(
                b"HTTP/1.1 200 OK\r\nSet-Cookie: session=abc; Path=/\r\nContent-Length: 2\r\n\r\nok"
            )
        elif path == "/redirect":
            writer.write(b"HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n")
        elif path == "/gzip":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 22\r\n\r\n"
                + gzip.compress(b"ok", mtime=0)
            )
        await writer.drain()
        return True


@pytest.fixture
async def script() -> AsyncIterator[Script]:
    server = Script()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def poster() -> AsyncIterator[AiohttpPoster]:
    made = AiohttpPoster(max_body=65536)
    yield made
    await made.aclose()


async def post(
    poster: AiohttpPoster, url: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """As ``WebhookSender`` posts: to the pinned target, its ``Host`` among the headers."""
    target = await pin(url, allow_private=True)
    return await poster.post(target, {**target.headers, **(headers or {})}, body)


async def test_requests_reuse_one_connection(script: Script, poster: AiohttpPoster) -> None:
    for number in range(5):
        answer = await post(poster, script.url("/ok"), b'{"n": %d}' % number, {"X-Test": "yes"})
        assert answer == (200, b"ok")
    assert script.connections == 1
    path, headers, body = script.requests[-1]
    assert (path, body) == ("/ok", b'{"n": 4}')
    assert headers["content-length"] == "8" and headers["x-test"] == "yes"
    assert headers["host"] == f"127.0.0.1:{script.port}"


async def test_the_headers_sent_are_the_callers_own(script: Script, poster: AiohttpPoster) -> None:
    target = await pin(script.url("/ok"), allow_private=True)
    headers = {"Host": "hooks.example:8443", "Content-Type": "application/json",
               "User-Agent": "mailbridge-webhooks/test", "X-Service-Event-Id": "evt-1"}  # fmt: skip
    assert await poster.post(target, headers, b"{}") == (200, b"ok")
    [(_path, received, _body)] = script.requests
    assert received == {
        "host": "hooks.example:8443",
        "content-type": "application/json",
        "user-agent": "mailbridge-webhooks/test",
        "x-service-event-id": "evt-1",
        "content-length": "2",
    }


async def test_concurrent_requests_use_one_connection_each(
    script: Script, poster: AiohttpPoster
) -> None:
    answers = await asyncio.gather(*(post(poster, script.url("/ok"), b"x") for _ in range(8)))
    assert all(status == 200 for status, _ in answers)
    assert script.connections == 8
    await asyncio.gather(*(post(poster, script.url("/ok"), b"x") for _ in range(8)))
    assert script.connections == 8  # all eight kept alive and reused


async def test_chunked_close_delimited_and_interim_answers(
    script: Script, poster: AiohttpPoster
) -> None:
    assert await post(poster, script.url("/chunked")) == (200, b"hello world")
    assert await post(poster, script.url("/until-close")) == (500, b"the whole story")
    assert await post(poster, script.url("/early-hints")) == (201, b"done")
    assert (await post(poster, script.url("/ok")))[0] == 200
    assert script.connections == 2  # a new one after the server closed the first


async def test_no_redirect_is_followed_no_cookie_kept_bodies_decoded(
    script: Script, poster: AiohttpPoster
) -> None:
    assert await post(poster, script.url("/redirect")) == (302, b"")
    await post(poster, script.url("/cookie"))
    await post(poster, script.url("/ok"))
    zipped = await post(poster, script.url("/gzip"))
    assert [path for path, _, _ in script.requests] == ["/redirect", "/cookie", "/ok", "/gzip"]
    assert "cookie" not in script.requests[2][1]
    assert zipped == (200, b"ok")  # decoded, as httpx's response did


async def test_a_large_body_is_cut_and_its_connection_dropped(
    script: Script, poster: AiohttpPoster
) -> None:
    status, content = await post(poster, script.url("/big"))
    assert status == 200 and 0 < len(content) <= 65536
    assert (await post(poster, script.url("/ok")))[0] == 200
    assert script.connections == 2


async def test_a_closed_idle_connection_is_replaced(script: Script, poster: AiohttpPoster) -> None:
    await post(poster, script.url("/close-after"))
    await asyncio.sleep(0.05)  # the close reaches the poster: never reused
    assert (await post(poster, script.url("/ok")))[0] == 200
    assert script.connections == 2
    # A server that drops a reused connection without answering (it had timed it out):
    # the request is sent once more on a fresh connection.
    assert (await post(poster, script.url("/drop-reused")))[0] == 200
    assert script.connections == 3
    assert [path for path, _, _ in script.requests].count("/drop-reused") == 2


async def test_a_fresh_connection_closed_without_answer_is_not_retried(
    script: Script, poster: AiohttpPoster
) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match="closed the connection"):
        await post(poster, script.url("/drop"))
    assert [path for path, _, _ in script.requests] == ["/drop"]


async def test_a_cancelled_request_closes_its_connection(
    script: Script, poster: AiohttpPoster
) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await post(poster, script.url("/slow"))
    assert (await post(poster, script.url("/ok")))[0] == 200
    assert script.connections == 2


async def test_failures_are_httpx_errors(script: Script, poster: AiohttpPoster) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match="malformed response"):
        await post(poster, script.url("/garbage"))
    with pytest.raises(httpx.ConnectError, match=r"cannot connect to 127\.0\.0\.1:9"):
        await post(poster, "http://127.0.0.1:9/nothing-listens")
    with pytest.raises(httpx.LocalProtocolError):
        await post(poster, script.url("/ok"), headers={"X-Bad": "a\r\nInjected: yes"})
    ftp = PinnedTarget(httpx.URL("ftp://127.0.0.1/x"), {"Host": "127.0.0.1"})
    with pytest.raises(httpx.UnsupportedProtocol):
        await poster.post(ftp, {}, b"")
    assert [path for path, _, _ in script.requests] == ["/garbage"]


def test_it_runs_on_uvloop_as_under_mailbridge_serve() -> None:
    async def exchange() -> tuple[int, int]:
        server = Script()
        await server.start()
        poster = AiohttpPoster()
        try:
            statuses = [(await post(poster, server.url("/ok")))[0] for _ in range(3)]
        finally:
            await poster.aclose()
            await server.stop()
        return statuses.count(200), server.connections

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(exchange()) == (3, 1)


# --- TLS: connected to the pinned address, the name kept -------------------------------


def tls_contexts(*names: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a fresh self-signed certificate for ``names``, and a client
    context trusting only it."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    with tempfile.TemporaryDirectory() as directory:
        cert_path, key_path = Path(directory, "cert.pem"), Path(directory, "key.pem")
        cert_path.write_bytes(pem)
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cadata=pem.decode())
    return server, client


def pinned(port: int, name: str) -> PinnedTarget:
    """What ``mail.targets.pin`` makes of ``https://<name>:<port>/ok`` when the name
    resolves to 127.0.0.1."""
    return PinnedTarget(
        httpx.URL(f"https://127.0.0.1:{port}/ok"),
        {"Host": f"{name}:{port}"},
        {"sni_hostname": name},
    )


async def test_tls_goes_to_the_pinned_address_with_the_name_for_sni_and_the_check() -> None:
    server_tls, client_tls = tls_contexts("hooks.example", "other.example")
    names: list[str | None] = []

    def record(_socket: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
        names.append(name)

    server_tls.sni_callback = record
    script = Script(tls=server_tls)
    await script.start()
    poster = AiohttpPoster(ssl_context=client_tls)
    try:
        for name in ("hooks.example", "hooks.example", "other.example"):
            target = pinned(script.port, name)
            assert await poster.post(target, target.headers, b"{}") == (200, b"ok")
        # A name the certificate does not hold is refused, whatever the address.
        elsewhere = pinned(script.port, "elsewhere.example")
        with pytest.raises(httpx.ConnectError, match=r"TLS with 127\.0\.0\.1"):
            await poster.post(elsewhere, elsewhere.headers, b"{}")
    finally:
        await poster.aclose()
        await script.stop()
    assert names == ["hooks.example", "other.example", "elsewhere.example"]
    # The connection made for one name is never used for another.
    assert script.connections == 2
    assert [headers["host"] for _, headers, _ in script.requests] == [
        f"hooks.example:{script.port}",
        f"hooks.example:{script.port}",
        f"other.example:{script.port}",
    ]
