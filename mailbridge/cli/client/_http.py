"""Requests to a running mailbridge over HTTP (httpx), answers as JSON or a failure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from mailbridge import __version__
from mailbridge.cli.client._config import Target
from mailbridge.cli.client._failures import api_error, cli_error, network_error

TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class Api:
    def __init__(self, target: Target, *, need_key: bool = True) -> None:
        if need_key and not target.api_key:
            raise cli_error(
                "no API key: pass --api-key, set MAILBRIDGE_API_KEY, or run mailbridge login"
            )
        headers = {"User-Agent": f"mailbridge-cli/{__version__}"}
        if target.api_key:
            headers["Authorization"] = f"Bearer {target.api_key}"
        self.target = target
        self.client = httpx.Client(base_url=target.base_url, headers=headers, timeout=TIMEOUT)

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.client.close()

    def call(
        self, method: str, path: str, *, params: dict[str, Any] | None = None,
        body: Any = None, headers: dict[str, str] | None = None,
    ) -> Any:  # fmt: skip
        """The answer's JSON (None when empty); raises a ``CliFailure`` otherwise."""
        response = self.raw(method, path, params=params, body=body, headers=headers)
        return response.json() if response.content else None

    def upload(self, path: str, name: str, content: bytes, fields: dict[str, str]) -> Any:
        """POST a file as ``multipart/form-data`` (its part named ``file``) with ``fields``."""
        return self._answer(
            lambda: self.client.post(path, files={"file": (name, content)}, data=fields)
        ).json()

    def raw(
        self, method: str, path: str, *, params: dict[str, Any] | None = None,
        body: Any = None, headers: dict[str, str] | None = None,
    ) -> httpx.Response:  # fmt: skip
        return self._answer(
            lambda: self.client.request(method, path, params=params, json=body, headers=headers)
        )

    def _answer(self, send: Callable[[], httpx.Response]) -> httpx.Response:
        try:
            response = send()
        except httpx.HTTPError as exc:
            raise network_error(f"{self.target.base_url}: {exc or type(exc).__name__}") from None
        if response.status_code >= 400:
            try:
                parsed = response.json()
            except ValueError:
                parsed = None
            raise api_error(response.status_code, parsed, response.text)
        return response
