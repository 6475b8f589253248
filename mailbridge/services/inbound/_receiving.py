"""Receiving a message before any transaction: read (parsed, and what it reports),
authenticated, and its raw bytes and each attachment staged as blobs; the writer
settles the blobs of a group (fsynced), ``_storing`` stores its rows, and only after
that commit does the listener answer 250.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from dns.resolver import LRUCache

from mailbridge.mail.inbound_reports import Bounce, Complaint, parse_report
from mailbridge.services.context import ServiceContext
from mailbridge.services.inbound._authentication import AuthResults, authenticate
from mailbridge.services.inbound._blobs import StagedBlob, stage_blob
from mailbridge.services.inbound._parsing import ParsedMessage, parse


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


INLINE_BYTES = 256 * 1024  # read on the event loop up to this size, else in a thread


def _read(raw: bytes, envelope_to: list[str]) -> tuple[ParsedMessage, Bounce | Complaint | None]:
    parsed = parse(raw)
    return parsed, parse_report(raw, envelope_to, parsed.message)


def _stage(raw: bytes, parsed: ParsedMessage) -> tuple[StagedBlob, list[StagedBlob]]:
    """The raw message's blob, and each attachment's."""
    return stage_blob(raw), [stage_blob(item.content) for item in parsed.attachments]


async def prepare(
    context: ServiceContext, raw: bytes, envelope_to: Sequence[str], *,
    mail_from: str = "", peer: str | None = None, helo: str | None = None,
    dns_cache: LRUCache | None = None,
) -> Received:  # fmt: skip
    """Parse, authenticate and stage the blobs (before any transaction; the writer stores
    them for a whole group at once). A message of ordinary size is read on the loop: a
    thread would cost more in handing the interpreter lock back and forth than the parse
    itself; a big one is read in a thread."""
    if len(raw) <= INLINE_BYTES:
        parsed, report = _read(raw, list(envelope_to))
        raw_blob, attachments = _stage(raw, parsed)
    else:
        parsed, report = await asyncio.to_thread(_read, raw, list(envelope_to))
        raw_blob, attachments = await asyncio.to_thread(_stage, raw, parsed)
    auth = await authenticate(
        context.settings, raw, parsed.message, mail_from, peer, helo, dns_cache
    )
    return Received(len(raw), parsed, report, raw_blob, attachments, auth)
