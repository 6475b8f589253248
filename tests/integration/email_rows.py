"""Email rows made directly through the ORM, shaped as the send API leaves them.

Reading and tracking tests use these instead of POST /emails, so they exercise only
the code under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr
from typing import Any

from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Email, EmailAttachment, EmailEvent
from mailbridge.storage.types import new_id


@dataclass(frozen=True)
class AttachmentRow:
    filename: str
    content: bytes | None = None
    path: str | None = None
    content_type: str = "application/octet-stream"
    content_id: str | None = None


def _bare(address: str) -> str:
    return parseaddr(address)[1].lower()


async def add_email(
    context: ServiceContext,
    team_id: str,
    *,
    to: Sequence[str] = ("ada@mail.net",),
    cc: Sequence[str] = (),
    bcc: Sequence[str] = (),
    reply_to: Sequence[str] = (),
    sender: str = "Acme <news@acme.io>",
    subject: str = "Hello",
    html: str | None = "<p>Hello</p>",
    text: str | None = "Hello",
    status: str = "delivered",
    events: Sequence[tuple[str, dict[str, Any]] | str] = ("queued", "sent", "delivered"),
    tags: Sequence[dict[str, Any]] = (),
    created_at: datetime | None = None,
    scheduled_at: datetime | None = None,
    contact_id: str | None = None,
    campaign_id: str | None = None,
    attachments: Sequence[AttachmentRow] = (),
) -> Email:
    """Insert an email with its events (1 ms apart) and attachments; the email row."""
    created = created_at or context.clock.now()
    email_id = new_id()
    addresses = [_bare(address) for address in [*to, *cc, *bcc]]
    email = Email(
        id=email_id,
        team_id=team_id,
        from_address=sender,
        from_email=_bare(sender),
        to=list(to),
        cc=list(cc),
        bcc=list(bcc),
        reply_to=list(reply_to),
        delivery_recipients=addresses,
        recipients_text="\n" + "".join(f"{address}\n" for address in addresses),
        subject=subject,
        html=html,
        text=text,
        headers={},
        tags=[dict(tag) for tag in tags],
        contact_id=contact_id,
        campaign_id=campaign_id,
        marketing=campaign_id is not None,
        status=status,
        last_event=status,
        scheduled_at=scheduled_at,
        message_id=f"<{email_id}@acme.io>",
        created_at=created,
        updated_at=created,
        sent_at=created + timedelta(milliseconds=1)
        if status not in ("queued", "scheduled")
        else None,
    )
    async with context.database.session() as session:
        session.add(email)
        await session.flush()
        for position, event in enumerate(events):
            event_type, data = (event, {}) if isinstance(event, str) else event
            session.add(
                EmailEvent(
                    email_id=email_id,
                    team_id=team_id,
                    type=event_type,
                    data=data,
                    created_at=created + timedelta(milliseconds=position),
                )
            )
        for attachment in attachments:
            session.add(
                EmailAttachment(
                    email_id=email_id,
                    team_id=team_id,
                    filename=attachment.filename,
                    content_type=attachment.content_type,
                    content_id=attachment.content_id,
                    size=len(attachment.content) if attachment.content is not None else None,
                    path=attachment.path,
                    content=attachment.content,
                    created_at=created,
                )
            )
        await session.commit()
    return email


def at(day: int, hour: int = 12) -> datetime:
    """An instant in January 2026 (tests set created_at explicitly to test date ranges)."""
    return datetime(2026, 1, day, hour, tzinfo=UTC)
