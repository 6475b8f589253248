"""Which thread a message belongs to.

1. The ``In-Reply-To`` and ``References`` of the message name a message already in the
   inbox (received, or sent from it — its ``Message-ID`` is ``<email id@domain>``):
   that message's thread. This is how mail clients thread (RFC 5322 §3.6.4).
2. Failing that, a thread of the inbox with the same subject once ``Re:``/``Fwd:`` and
   the like are taken off, whose first correspondent wrote from the same domain, with a
   message in the last :data:`SUBJECT_WINDOW` — never across senders' domains, so that
   two customers who both write "Invoice" do not share a conversation.
3. Otherwise a new thread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.storage.tables import InboxMessage, InboxThread

SUBJECT_WINDOW = timedelta(days=7)
_PREFIX = re.compile(r"^\s*(?:(?:re|fw|fwd|aw|wg|sv|vs|tr|rif|enc)\s*(?:\[\d+\])?\s*:\s*)+", re.I)
_MESSAGE_ID = re.compile(r"<[^<>\s]+>")


def subject_key(subject: str | None) -> str:
    """The subject as threads compare it: reply and forward prefixes off, spaces folded,
    lower-case (at most 200 characters)."""
    text = _PREFIX.sub("", subject or "")
    return " ".join(text.split()).lower()[:200]


def message_ids(*values: str | Sequence[str] | None) -> list[str]:
    """Every ``<id>`` in the given header values, lower-case, in order, once each."""
    found: list[str] = []
    for value in values:
        texts = [value] if isinstance(value, str) else list(value or ())
        for text in texts:
            for each in _MESSAGE_ID.findall(text):
                if each.lower() not in found:
                    found.append(each.lower())
    return found


def normalized_message_id(value: str | None) -> str | None:
    found = message_ids(value)
    return found[0][:998] if found else None


async def thread_for(
    session: AsyncSession, inbox_id: str, references: list[str], subject: str | None,
    sender_domain: str, now: datetime,
) -> InboxThread | None:  # fmt: skip
    """The inbox's thread the message joins, if any (module docstring)."""
    if references:
        thread_id = await session.scalar(
            select(InboxMessage.thread_id)
            .where(InboxMessage.inbox_id == inbox_id, InboxMessage.message_id.in_(references))
            .order_by(InboxMessage.created_at.desc())
            .limit(1)
        )
        if thread_id is not None:
            return await session.get(InboxThread, thread_id)
    key = subject_key(subject)
    if not key:
        return None
    found: InboxThread | None = await session.scalar(
        select(InboxThread)
        .where(
            InboxThread.inbox_id == inbox_id,
            InboxThread.subject_key == key,
            InboxThread.correspondent_domain == sender_domain,
            InboxThread.latest_at >= now - SUBJECT_WINDOW,
        )
        .order_by(InboxThread.latest_at.desc())
        .limit(1)
    )
    return found
