"""Receiving a message before any transaction: read (parsed, and what it reports,
within bounds and off the event loop unless it is small: ``_parse_worker``),
authenticated, and its raw bytes and each attachment staged as blobs; the writer
settles the blobs of a group (fsynced), ``_storing`` stores its rows, and only after
that commit does the listener answer 250.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from dns.resolver import LRUCache

from mailbridge.mail.inbound_reports import Bounce, Complaint
from mailbridge.services.inbound._authentication import AuthResults, authenticate
from mailbridge.services.inbound._blobs import StagedBlob, stage_blob
from mailbridge.services.inbound._parse_worker import read_bounded
from mailbridge.services.inbound._parsing import ParsedMessage
from mailbridge.services.kernel import ServiceContext


@dataclass(frozen=True)
class Received:
    size: int
    parsed: ParsedMessage
    report: Bounce | Complaint | None
    raw: StagedBlob  # stored durably before the rows commit
    attachments: list[StagedBlob]  # each attachment's: a cache, written after the commit
    auth: AuthResults

    @property
    def raw_blob(self) -> str:
        return self.raw.name

    @property
    def attachment_blobs(self) -> list[str]:
        return [blob.name for blob in self.attachments]


HASH_INLINE_BYTES = 256 * 1024  # blobs named on the event loop up to this size (cheap)


def _stage(raw: bytes, parsed: ParsedMessage) -> tuple[StagedBlob, list[StagedBlob]]:
    """The raw message's blob, and each attachment's."""
    return stage_blob(raw), [stage_blob(item.content) for item in parsed.attachments]


async def prepare(
    context: ServiceContext, raw: bytes, envelope_to: Sequence[str], *,
    mail_from: str = "", peer: str | None = None, helo: str | None = None,
    dns_cache: LRUCache | None = None,
) -> Received:  # fmt: skip
    """Parse, authenticate and stage the blobs (before any transaction; the writer stores
    them for a whole group at once). A small message's blobs are named on the loop: a
    thread would cost more in handing the interpreter lock back and forth than hashing."""
    parsed, report = await read_bounded(raw, envelope_to)
    if len(raw) <= HASH_INLINE_BYTES:
        raw_blob, attachments = _stage(raw, parsed)
    else:
        raw_blob, attachments = await asyncio.to_thread(_stage, raw, parsed)
    auth = await authenticate(
        context.settings, raw, parsed.message, mail_from, peer, helo, dns_cache
    )
    return Received(len(raw), parsed, report, raw_blob, attachments, auth)
