"""A small HTTP/1.1 load generator on raw asyncio streams (keep-alive, many connections).

Load generators written with a full HTTP client spend more CPU than the server under
test on a 2-core machine; this one sends pre-built request bytes and reads just enough
of each answer to find its end.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class LoadResult:
    requests: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def line(self, label: str) -> str:
        return (
            f"{label:<28} {self.per_second:8.0f} req/s   p50 {self.percentile(0.5) * 1000:6.1f} ms"
            f"   p99 {self.percentile(0.99) * 1000:6.1f} ms   statuses {dict(self.statuses)}"
        )


def request_bytes(host: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}",
             "Content-Type: application/json"]  # fmt: skip
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    if length:
        await reader.readexactly(length)
    return status


async def run_load(
    host: str, port: int, make_request: Callable[[int], bytes], *, total: int, connections: int
) -> LoadResult:
    """Send ``total`` requests over ``connections`` keep-alive connections."""
    counter = iter(range(total))
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for number in counter:
                started = time.perf_counter()
                writer.write(make_request(number))
                status = await _read_response(reader)
                latencies.append(time.perf_counter() - started)
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    return LoadResult(len(latencies), time.perf_counter() - started, latencies, statuses)


def median(values: list[float]) -> float:
    return statistics.median(values)
