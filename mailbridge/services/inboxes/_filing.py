"""Filing mail into inboxes: an activity consumer of ``email.received`` and ``email.sent``.

The dispatcher hands every activity event once, in a transaction with what its
consumers add (``services.webhooks``' activity dispatch). For a received message whose
envelope recipient is an inbox's address (and of that inbox's team), the filer adds it
to a thread (``_threading``) in that transaction — so no message is filed twice or
lost, and the listener's hot path stays as it was. A new message makes its thread
unread, brings an archived one back to the inbox folder, and records
``inbox.email.received`` (and ``inbox.thread.created`` for a new thread) for webhooks
and automations, with what a ``condition`` step routes on: from, to, subject, the text
(its first :data:`EVENT_TEXT` characters), the thread's labels, SPF/DKIM/DMARC.
Reports (bounces, complaints) are not conversations: not filed. When an agent is
configured and the inbox lets it act, the message is offered to it in the same
transaction (``_agent_calls``).

An email the team sends from an inbox's address — a reply made with the inbox's routes,
or any ``POST /emails`` from that address — is filed when it goes out (its first
``email.sent``): into the thread its ``In-Reply-To``/``References`` name, else a new
thread in the ``sent`` folder; ``inbox.email.sent``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock
from mailbridge.mail.addresses import domain_of, parse_recipient
from mailbridge.services.inboxes._agent_calls import agent_asked, offer_to_agent
from mailbridge.services.inboxes._labels import labels_of
from mailbridge.services.inboxes._search import index_message, plain_text
from mailbridge.services.inboxes._threading import (
    message_ids,
    normalized_message_id,
    subject_key,
    thread_for,
)
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.storage.tables import (
    ActivityEvent,
    Email,
    EmailAttachment,
    Inbox,
    InboxMessage,
    InboxThread,
    ReceivedAttachment,
    ReceivedEmail,
)

FILED_KINDS = frozenset({"message", "reply", "auto_reply"})
# Characters of a message's text its events carry (a condition step routes on it; the
# whole message is a GET away).
EVENT_TEXT = 10_000
# A new message brings its thread back from these folders (spam and trash keep it).
RETURNS_FROM = frozenset({"archive", "sent"})


class InboxFiler:
    name = "inboxes"

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self._offered = 0  # messages offered to the agent in the batch being dispatched

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        received_ids = _email_ids(events, "email.received")
        sent_ids = _email_ids(events, "email.sent")
        if received_ids:
            agent = bool(context.settings.inbox_agent_url)
            self._offered += await _file_received(session, context.clock, received_ids, agent)
        if sent_ids:
            await _file_sent(session, context.clock, sent_ids)

    def dispatched(self) -> None:
        if self._offered:
            self._offered = 0
            self.context.work_added("inbox-agent")


def _email_ids(events: Sequence[ActivityEvent], event_type: str) -> list[str]:
    return [
        event.data["email_id"]
        for event in events
        if event.type == event_type
        and isinstance(event.data, dict)
        and isinstance(event.data.get("email_id"), str)
    ]


async def _label_names(session: AsyncSession, thread: InboxThread, created: bool) -> list[str]:
    if created:  # a new thread has none yet
        return []
    return [label.name for label in (await labels_of(session, [thread.id]))[thread.id]]


async def _inboxes(session: AsyncSession, addresses: set[str]) -> dict[str, Inbox]:
    found = await session.scalars(select(Inbox).where(Inbox.email_address.in_(addresses)))
    return {inbox.email_address: inbox for inbox in found}


async def _file_received(session: AsyncSession, clock: Clock, ids: list[str], agent: bool) -> int:
    """File the received messages; how many were offered to an agent."""
    rows = await session.scalars(
        select(ReceivedEmail)
        .where(ReceivedEmail.id.in_(ids), ReceivedEmail.kind.in_(FILED_KINDS))
        .order_by(ReceivedEmail.created_at, ReceivedEmail.id)
    )
    received = list(rows.all())
    inboxes = await _inboxes(session, {row.recipient for row in received})
    offered = 0
    for row in received:
        inbox = inboxes.get(row.recipient)
        if inbox is not None and inbox.team_id == row.team_id:
            message = await file_received(session, clock, inbox, row)
            if message is not None and agent_asked(inbox, configured=agent):
                offer_to_agent(session, clock, inbox, message)
                offered += 1
    return offered


async def _file_sent(session: AsyncSession, clock: Clock, ids: list[str]) -> None:
    rows = await session.scalars(
        select(Email).where(Email.id.in_(ids)).order_by(Email.created_at, Email.id)
    )
    sent = list(rows.all())
    inboxes = await _inboxes(session, {email.from_email.lower() for email in sent})
    for email in sent:
        inbox = inboxes.get(email.from_email.lower())
        if inbox is not None and inbox.team_id == email.team_id:
            await file_sent(session, clock, inbox, email)


async def file_sent(
    session: AsyncSession, clock: Clock, inbox: Inbox, email: Email
) -> InboxMessage | None:
    """Add an email sent from ``inbox``'s address to its thread (None: filed already)."""
    if await session.get(InboxMessage, email.id) is not None:
        return None
    headers = {str(name).lower(): str(value) for name, value in (email.headers or {}).items()}
    references = message_ids(headers.get("in-reply-to"), headers.get("references"))
    recipient = parse_recipient(email.to[0]) if email.to else None
    correspondent = domain_of(recipient or inbox.email_address)
    at = email.sent_at or email.created_at
    thread = await thread_for(session, inbox.id, references, email.subject, correspondent, at)
    created = thread is None
    if thread is None:
        thread = InboxThread(
            team_id=inbox.team_id, inbox_id=inbox.id, subject=email.subject,
            subject_key=subject_key(email.subject), correspondent_domain=correspondent[:255],
            from_address=email.from_address, to=list(email.to or []), cc=list(email.cc or []),
            folder="sent", read=True, email_count=0, has_attachment=False, latest_at=at,
            created_at=clock.now(), updated_at=clock.now(),
        )  # fmt: skip
        session.add(thread)
        await session.flush()
    attachments = await session.scalar(
        select(func.count()).where(EmailAttachment.email_id == email.id)
    )
    thread.email_count += 1
    thread.has_attachment = thread.has_attachment or bool(attachments)
    thread.latest_at = max(thread.latest_at, at)
    thread.updated_at = clock.now()
    message = InboxMessage(
        id=email.id, team_id=inbox.team_id, inbox_id=inbox.id, thread_id=thread.id,
        direction="outbound", message_id=normalized_message_id(email.message_id), read=True,
        created_at=at,
    )  # fmt: skip
    session.add(message)
    await index_message(
        session, email.id, thread.id, inbox.id, email.subject, email.from_address,
        [*email.to, *(email.cc or [])], plain_text(email.text, email.html),
    )  # fmt: skip
    data: dict[str, Any] = {
        "source": "api", "inbox_id": inbox.id, "thread_id": thread.id, "email_id": email.id,
        "from": email.from_address, "to": list(email.to or []), "subject": email.subject,
        "text": plain_text(email.text, email.html)[:EVENT_TEXT],
        "labels": await _label_names(session, thread, created),
    }  # fmt: skip
    if created:
        record_event(session, clock, inbox.team_id, "inbox.thread.created", data)
    record_event(session, clock, inbox.team_id, "inbox.email.sent", data)
    return message


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
    await index_message(
        session, row.id, thread.id, inbox.id, row.subject, row.from_address,
        [*(row.to or []), *(row.cc or [])], plain_text(row.text, row.html),
    )  # fmt: skip
    inbox.last_received = max(inbox.last_received or row.created_at, row.created_at)
    data: dict[str, Any] = {
        "source": "system", "inbox_id": inbox.id, "thread_id": thread.id, "email_id": row.id,
        "from": row.from_address, "to": list(row.to or []), "subject": row.subject,
        "text": plain_text(row.text, row.html)[:EVENT_TEXT],
        "labels": await _label_names(session, thread, created),
        "spf": row.spf, "dkim": row.dkim, "dmarc": row.dmarc,
    }  # fmt: skip
    if created:
        record_event(session, clock, inbox.team_id, "inbox.thread.created", data)
    record_event(session, clock, inbox.team_id, "inbox.email.received", data)
    return message
