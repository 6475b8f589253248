"""Filing received mail into inboxes: an activity consumer of ``email.received``.

The dispatcher hands every activity event once, in a transaction with what its
consumers add (``services.webhooks``' activity dispatch). For a received message whose
envelope recipient is an inbox's address (and of that inbox's team), the filer adds it
to a thread (``_threading``) in that transaction — so no message is filed twice or
lost, and the listener's hot path stays as it was. A new message makes its thread
unread, brings an archived one back to the inbox folder, and records
``inbox.email.received`` (and ``inbox.thread.created`` for a new thread) for webhooks
and automations. Reports (bounces, complaints) are not conversations: not filed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.mail.addresses import domain_of, parse_recipient
from mailbridge.services.inboxes._threading import (
    message_ids,
    normalized_message_id,
    subject_key,
    thread_for,
)
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.storage.tables import (
    ActivityEvent,
    Inbox,
    InboxMessage,
    InboxThread,
    ReceivedAttachment,
    ReceivedEmail,
)

FILED_KINDS = frozenset({"message", "reply", "auto_reply"})
# A new message brings its thread back from these folders (spam and trash keep it).
RETURNS_FROM = frozenset({"archive", "sent"})


class InboxFiler:
    name = "inboxes"

    def __init__(self, context: ServiceContext) -> None:
        self.context = context

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        ids = [
            event.data["email_id"]
            for event in events
            if event.type == "email.received"
            and isinstance(event.data, dict)
            and isinstance(event.data.get("email_id"), str)
        ]
        if not ids:
            return
        received = list(
            (
                await session.scalars(
                    select(ReceivedEmail)
                    .where(ReceivedEmail.id.in_(ids), ReceivedEmail.kind.in_(FILED_KINDS))
                    .order_by(ReceivedEmail.created_at, ReceivedEmail.id)
                )
            ).all()
        )
        if not received:
            return
        addresses = {row.recipient for row in received}
        inboxes = {
            inbox.email_address: inbox
            for inbox in await session.scalars(
                select(Inbox).where(Inbox.email_address.in_(addresses))
            )
        }
        for row in received:
            inbox = inboxes.get(row.recipient)
            if inbox is not None and inbox.team_id == row.team_id:
                await file_received(session, context.clock, inbox, row)

    def dispatched(self) -> None:
        pass


async def file_received(
    session: AsyncSession, clock: Clock, inbox: Inbox, row: ReceivedEmail
) -> InboxMessage | None:
    """Add a received message to its thread of ``inbox`` (None: filed already)."""
    if await session.get(InboxMessage, row.id) is not None:
        return None
    sender = parse_recipient(row.from_address or "") or row.envelope_from or ""
    references = message_ids(row.in_reply_to, row.references)
    thread = await thread_for(
        session, inbox.id, references, row.subject, domain_of(sender), row.created_at
    )
    created = thread is None
    if thread is None:
        thread = InboxThread(
            team_id=inbox.team_id, inbox_id=inbox.id, subject=row.subject,
            subject_key=subject_key(row.subject), correspondent_domain=domain_of(sender)[:255],
            from_address=row.from_address, to=list(row.to or []), cc=list(row.cc or []),
            folder="inbox", read=False, email_count=0, has_attachment=False,
            latest_at=row.created_at, created_at=clock.now(), updated_at=clock.now(),
        )  # fmt: skip
        session.add(thread)
        await session.flush()
    attachments = await session.scalar(
        select(func.count()).where(ReceivedAttachment.received_email_id == row.id)
    )
    thread.email_count += 1
    thread.read = False
    thread.has_attachment = thread.has_attachment or bool(attachments)
    thread.latest_at = max(thread.latest_at, row.created_at)
    if thread.folder in RETURNS_FROM:
        thread.folder = "inbox"
    thread.updated_at = clock.now()
    message = InboxMessage(
        id=row.id, team_id=inbox.team_id, inbox_id=inbox.id, thread_id=thread.id,
        direction="inbound", message_id=normalized_message_id(row.message_id), read=False,
        created_at=row.created_at,
    )  # fmt: skip
    session.add(message)
    inbox.last_received = max(inbox.last_received or row.created_at, row.created_at)
    data: dict[str, Any] = {
        "source": "system", "inbox_id": inbox.id, "thread_id": thread.id, "email_id": row.id,
        "from": row.from_address, "to": list(row.to or []), "subject": row.subject,
        "spf": row.spf, "dkim": row.dkim, "dmarc": row.dmarc,
    }  # fmt: skip
    if created:
        record_event(session, clock, inbox.team_id, "inbox.thread.created", data)
    record_event(session, clock, inbox.team_id, "inbox.email.received", data)
    return message
