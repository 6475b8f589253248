"""The pages' way to the HTTP API: in process (httpx over ASGI, no socket), as the
signed-in member (their session token as the bearer), so each page reads and writes
exactly what that member may through the API, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import Request

USER_AGENT = "mailbridge-dashboard"


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error_name(self) -> str:
        return str(self.body.get("name", "")) if isinstance(self.body, dict) else ""

    @property
    def message(self) -> str:
        if isinstance(self.body, dict):
            return str(self.body.get("message", ""))
        return ""

    def items(self) -> list[dict[str, Any]]:
        """A list answer's rows."""
        if isinstance(self.body, dict) and isinstance(self.body.get("data"), list):
            return list(self.body["data"])
        return []


class Api:
    def __init__(self, request: Request, token: str) -> None:
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=request.app),
            base_url="http://dashboard.internal",
            headers={"authorization": f"Bearer {token}", "user-agent": USER_AGENT},
            timeout=30,
        )

    async def call(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None
    ) -> Answer:
        clean = {k: v for k, v in (params or {}).items() if v not in (None, "")}
        # Ids come from the page's own path, decoded: encode them again, whatever they hold.
        encoded = quote(path.encode("utf-8", "surrogatepass"), safe="/")
        response = await self._client.request(method, encoded, params=clean, json=json)
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return Answer(response.status_code, body)

    async def get(self, path: str, **params: Any) -> Answer:
        return await self.call("GET", path, params=params)

    async def close(self) -> None:
        await self._client.aclose()
