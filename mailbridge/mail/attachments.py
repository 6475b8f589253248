"""Attachments given by ``path``: fetched with httpx when the email is delivered.

Rules:

- http and https only; at most 25 MB a file and 40 MB for all of an email's
  attachments together (the bytes stored with the email count too). The body is
  streamed and the fetch stops as soon as a limit is passed.
- No private targets (``mail.targets``, shared with webhooks): every address of the
  host must be public unless ``MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE`` is set, and the
  request goes to the address that was checked. Redirects (at most 3) are followed by
  hand and each target is checked the same way.
- A failure says whether trying again later can help. Temporary (the email is
  ``delivery_delayed`` and retried): timeouts, connection errors, name resolution
  errors, 5xx, 408 and 429. Permanent (the email ``failed``, with the reason in
  ``last_error``): a bad URL or scheme, a refused address, any other 4xx or 3xx
  without a location, too many redirects, a file or email over its size limit.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from mailbridge.errors import MailbridgeError
from mailbridge.mail.targets import TargetRefused, pin
from mailbridge.mail.targets import is_public as is_public  # the address rule, re-exported

MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
MAX_EMAIL_ATTACHMENT_BYTES = 40 * 1024 * 1024
MAX_REDIRECTS = 3
_TEMPORARY_STATUSES = frozenset({408, 425, 429})


class AttachmentFetchError(MailbridgeError):
    """An attachment could not be fetched; ``temporary`` says whether a retry may help."""

    def __init__(self, message: str, *, temporary: bool, too_large: bool = False) -> None:
        super().__init__(message)
        self.temporary = temporary
        self.too_large = too_large


@dataclass(frozen=True)
class FetchPolicy:
    allow_private: bool = False
    timeout: float = 30.0  # seconds for the whole fetch, redirects included


async def fetch_attachment(
    client: httpx.AsyncClient, url: str, *, policy: FetchPolicy, limit: int = MAX_ATTACHMENT_BYTES
) -> bytes:
    """The bytes at ``url``, at most ``limit`` of them."""
    try:
        async with asyncio.timeout(policy.timeout):
            return await _fetch(client, url, policy, limit)
    except TimeoutError as exc:
        raise AttachmentFetchError(
            f"fetching {url} took longer than {policy.timeout:g} s", temporary=True
        ) from exc


async def _fetch(client: httpx.AsyncClient, url: str, policy: FetchPolicy, limit: int) -> bytes:
    for _ in range(MAX_REDIRECTS + 1):
        request = await _pinned_request(client, url, policy)
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise AttachmentFetchError(f"fetching {url} timed out", temporary=True) from exc
        except httpx.HTTPError as exc:
            raise AttachmentFetchError(f"cannot fetch {url}: {exc}", temporary=True) from exc
        try:
            if response.is_redirect:
                location = response.headers.get("location")
                if not location:
                    raise AttachmentFetchError(
                        f"{url} answered {response.status_code} without a location",
                        temporary=False,
                    )
                url = urljoin(url, location)
                continue
            _check_status(url, response)
            return await _read_capped(url, response, limit)
        finally:
            await response.aclose()
    raise AttachmentFetchError(f"{url}: more than {MAX_REDIRECTS} redirects", temporary=False)


async def _pinned_request(
    client: httpx.AsyncClient, url: str, policy: FetchPolicy
) -> httpx.Request:
    try:
        target = await pin(url, allow_private=policy.allow_private, what="attachment URL")
    except TargetRefused as exc:
        raise AttachmentFetchError(str(exc), temporary=exc.temporary) from exc
    return client.build_request(
        "GET", target.url, headers=target.headers, extensions=target.extensions
    )


def _check_status(url: str, response: httpx.Response) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    temporary = status >= 500 or status in _TEMPORARY_STATUSES
    raise AttachmentFetchError(f"fetching {url} answered {status}", temporary=temporary)


async def _read_capped(url: str, response: httpx.Response, limit: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _too_large(url, limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise _too_large(url, limit)
            chunks.append(chunk)
    except httpx.TimeoutException as exc:
        raise AttachmentFetchError(f"reading {url} timed out", temporary=True) from exc
    except httpx.HTTPError as exc:
        raise AttachmentFetchError(f"reading {url} failed: {exc}", temporary=True) from exc
    return b"".join(chunks)


def _too_large(url: str, limit: int) -> AttachmentFetchError:
    return AttachmentFetchError(
        f"{url} is larger than the {limit / 1024 / 1024:g} MB allowed",
        temporary=False,
        too_large=True,
    )
