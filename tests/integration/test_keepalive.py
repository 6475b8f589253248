"""The keep-alive transport webhooks are sent with, against a scripted HTTP/1.1 server on
loopback: connection reuse, the framings a response may use, interim answers, oversized
bodies, servers that close idle connections, cancelled requests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
import uvloop

from mailbridge.mail.keepalive import KeepAliveTransport


class Script:
    """An HTTP/1.1 server answering by path; counts connections and requests."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
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
        except (asyncio.IncompleteReadError, ConnectionError):
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
        elif path == "/slow":
            await asyncio.sleep(2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path == "/garbage":
            writer.write(b"SMTP/9 hello there\r\n\r\n")
        await writer.drain()
        return True


@pytest.fixture
async def script() -> AsyncIterator[Script]:
    server = Script()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=KeepAliveTransport(max_body=65536)) as http:
        yield http


async def test_requests_reuse_one_connection(script: Script, client: httpx.AsyncClient) -> None:
    for number in range(5):
        response = await client.post(
            script.url("/ok"), content=b'{"n": %d}' % number, headers={"X-Test": "yes"}
        )
        assert response.status_code == 200 and response.content == b"ok"
    assert script.connections == 1
    path, headers, body = script.requests[-1]
    assert (path, body) == ("/ok", b'{"n": 4}')
    assert headers["content-length"] == "8" and headers["x-test"] == "yes"
    assert headers["host"] == f"127.0.0.1:{script.port}"


async def test_concurrent_requests_use_one_connection_each(
    script: Script, client: httpx.AsyncClient
) -> None:
    responses = await asyncio.gather(
        *(client.post(script.url("/ok"), content=b"x") for _ in range(8))
    )
    assert all(response.status_code == 200 for response in responses)
    assert script.connections == 8
    await asyncio.gather(*(client.post(script.url("/ok"), content=b"x") for _ in range(8)))
    assert script.connections == 8  # all eight kept alive and reused


async def test_chunked_close_delimited_and_interim_answers(
    script: Script, client: httpx.AsyncClient
) -> None:
    chunked = await client.post(script.url("/chunked"))
    assert chunked.content == b"hello world"
    until_close = await client.post(script.url("/until-close"))
    assert until_close.status_code == 500 and until_close.content == b"the whole story"
    hinted = await client.post(script.url("/early-hints"))
    assert hinted.status_code == 201 and hinted.content == b"done"
    again = await client.post(script.url("/ok"))
    assert again.status_code == 200
    assert script.connections == 2  # a new one after the server closed the first


async def test_a_large_body_is_cut_and_its_connection_dropped(
    script: Script, client: httpx.AsyncClient
) -> None:
    big = await client.post(script.url("/big"))
    assert big.status_code == 200 and 0 < len(big.content) <= 65536
    assert (await client.post(script.url("/ok"))).status_code == 200
    assert script.connections == 2


async def test_a_closed_idle_connection_is_replaced(
    script: Script, client: httpx.AsyncClient
) -> None:
    await client.post(script.url("/close-after"))
    await asyncio.sleep(0.05)  # the close reaches the transport: never reused
    assert (await client.post(script.url("/ok"))).status_code == 200
    assert script.connections == 2
    # A server that drops a reused connection without answering (it had timed it out):
    # the request is sent once more on a fresh connection.
    assert (await client.post(script.url("/drop-reused"))).status_code == 200
    assert script.connections == 3
    assert [path for path, _, _ in script.requests].count("/drop-reused") == 2


async def test_a_cancelled_request_closes_its_connection(
    script: Script, client: httpx.AsyncClient
) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await client.post(script.url("/slow"))
    assert (await client.post(script.url("/ok"))).status_code == 200
    assert script.connections == 2


async def test_failures_are_httpx_errors(script: Script, client: httpx.AsyncClient) -> None:
    with pytest.raises(httpx.RemoteProtocolError):
        await client.post(script.url("/garbage"))
    with pytest.raises(httpx.ConnectError):
        await client.post("http://127.0.0.1:9/nothing-listens")
    with pytest.raises(httpx.LocalProtocolError):
        await client.post(script.url("/ok"), headers={"X-Bad": "a\r\nInjected: yes"})
    with pytest.raises(httpx.UnsupportedProtocol):
        await KeepAliveTransport().handle_async_request(httpx.Request("GET", "ftp://x/"))


def test_it_runs_on_uvloop_as_under_mailbridge_serve() -> None:
    async def exchange() -> tuple[int, int]:
        server = Script()
        await server.start()
        try:
            async with httpx.AsyncClient(transport=KeepAliveTransport()) as http:
                statuses = [(await http.post(server.url("/ok"))).status_code for _ in range(3)]
        finally:
            await server.stop()
        return statuses.count(200), server.connections

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(exchange()) == (3, 1)
