"""Due email rows made through the ORM, exactly as POST /emails leaves them (the contract).

Delivery tests start from these, so they exercise the runner alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parseaddr
from typing import Any

from mailbridge.services.domains import _domains as domains
from mailbridge.services.email._events import record_email_event
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.tables import Domain, Email, EmailAttachment
from mailbridge.storage.types import new_id


@dataclass(frozen=True)
class Attachment:
    filename: str
    content: bytes | None = None
    path: str | None = None
    content_type: str = "application/octet-stream"
    content_id: str | None = None


def bare(address: str) -> str:
    return parseaddr(address)[1].lower()


async def add_domain(context: ServiceContext, team_id: str, name: str = "shop.io") -> Domain:
    """A verified sending domain with a fresh DKIM key."""
    async with context.database.session() as session:
        domain = await domains.create_domain(
            session, context.clock, context.settings, team_id, name, verified=True
        )
        await session.commit()
    return domain


async def add_email(
    context: ServiceContext,
    domain: Domain,
    *,
    sender: str | None = None,
    to: Sequence[str] = ("ann@corp.io",),
    cc: Sequence[str] = (),
    bcc: Sequence[str] = (),
    reply_to: Sequence[str] = (),
    subject: str = "Hello",
    html: str | None = "<p>Hello</p>",
    text: str | None = "Hello",
    headers: dict[str, Any] | None = None,
    marketing: bool = False,
    attachments: Sequence[Attachment] = (),
    scheduled: bool = False,
) -> Email:
    """An accepted email, due now (``queued``) or at the clock's now as ``scheduled``."""
    now = context.clock.now()
    sender = sender or f"Shop <news@{domain.name}>"
    email_id = new_id()
    recipients = [bare(address) for address in [*to, *cc, *bcc]]
    status = "scheduled" if scheduled else "queued"
    email = Email(
        id=email_id,
        team_id=domain.team_id,
        domain_id=domain.id,
        from_address=sender,
        from_email=bare(sender),
        to=list(to),
        cc=list(cc),
        bcc=list(bcc),
        reply_to=list(reply_to),
        delivery_recipients=list(dict.fromkeys(recipients)),
        recipients_text="\n" + "".join(f"{address}\n" for address in recipients),
        subject=subject,
        html=html,
        text=text,
        headers=dict(headers or {}),
        tags=[],
        marketing=marketing,
        status=status,
        last_event=status,
        scheduled_at=now if scheduled else None,
        due_at=now,
        attempts=0,
        message_id=f"<{email_id}@{domain.name}>",
        created_at=now,
        updated_at=now,
    )
    async with context.database.session() as session:
        session.add(email)
        await session.flush()
        for attachment in attachments:
            session.add(
                EmailAttachment(
                    email_id=email_id,
                    team_id=domain.team_id,
                    filename=attachment.filename,
                    content_type=attachment.content_type,
                    content_id=attachment.content_id,
                    size=len(attachment.content) if attachment.content is not None else None,
                    path=attachment.path,
                    content=attachment.content,
                    created_at=now,
                )
            )
        record_email_event(session, context.clock, email, status)
        await session.commit()
    return email


async def load_email(context: ServiceContext, email_id: str) -> Email:
    async with context.database.session() as session:
        email = await session.get(Email, email_id)
        assert email is not None
        return email
