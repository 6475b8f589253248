"""Reading sent email: the list with its filters, one email with its events, attachments.

``GET /emails`` filters (all optional, all narrow the list together):

- ``status``: one of the statuses of DESIGN §5;
- ``recipient``: an address (case-insensitive) among the email's to, cc or bcc;
- ``created_after`` / ``created_before``: ISO 8601 (a bare date is midnight UTC),
  exclusive, compared to the millisecond as ``created_at`` is shown;
- ``tag``: ``name`` (any value) or ``name:value``; repeat it to require several tags.

Attachment bytes are never inlined: each attachment carries a signed ``download_url``
served under ``/t/a/`` that expires an hour after the listing (an attachment given as
a ``path`` offers that URL instead, as nothing was stored for it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, exists, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from mailbridge.clock import isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.mail.signed_links import download_url
from mailbridge.services.email._events import EMAIL_EVENT_TYPES
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned, is_uuid
from mailbridge.storage.tables import Email, EmailAttachment, EmailEvent

DOWNLOAD_LIFETIME = timedelta(hours=1)


@dataclass(frozen=True)
class EmailFilters:
    status: str | None = None
    recipient: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    # (name, value or None for any value)
    tags: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def parse(
        cls,
        *,
        status: str | None = None,
        recipient: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        tags: Sequence[str] = (),
    ) -> EmailFilters:
        if status is not None and status not in EMAIL_EVENT_TYPES:
            raise ValidationError(
                f"`status` must be one of {', '.join(sorted(EMAIL_EVENT_TYPES))}."
            )
        address = None
        if recipient is not None:
            address = recipient.strip().lower()
            if "@" not in address or "\n" in address:
                raise ValidationError("`recipient` must be an email address.")
        return cls(
            status=status,
            recipient=address,
            created_after=_instant(created_after, "created_after"),
            created_before=_instant(created_before, "created_before"),
            tags=tuple(_tag(text) for text in tags),
        )


def _instant(text: str | None, name: str) -> datetime | None:
    if text is None:
        return None
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(f"`{name}` must be an ISO 8601 timestamp.") from None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


def _tag(text: str) -> tuple[str, str | None]:
    name, colon, value = text.partition(":")
    if not name.strip():
        raise ValidationError("`tag` must be `name` or `name:value`.")
    return name.strip(), (value.strip() if colon else None)


def _floor_ms(instant: datetime) -> datetime:
    return instant.replace(microsecond=instant.microsecond - instant.microsecond % 1000)


def _has_tag(dialect: str, name: str, value: str | None) -> ColumnElement[bool]:
    """The email carries tag ``name`` (with ``value``, when given): JSON on both backends."""
    tag_name: ColumnElement[Any]
    tag_value: ColumnElement[Any]
    if dialect == "postgresql":
        element = func.json_array_elements(Email.tags).table_valued("value").alias("tag")
        tag_name = element.c.value.op("->>")(literal("name"))
        tag_value = element.c.value.op("->>")(literal("value"))
    else:
        element = func.json_each(Email.tags).table_valued("value").alias("tag")
        tag_name = func.json_extract(element.c.value, "$.name")
        tag_value = func.json_extract(element.c.value, "$.value")
    matches = select(literal(1)).select_from(element).where(tag_name == name)
    if value is not None:
        matches = matches.where(tag_value == value)
    return exists(matches)


def filtered(
    query: Select[tuple[Email]], filters: EmailFilters, dialect: str
) -> Select[tuple[Email]]:
    if filters.status is not None:
        query = query.where(Email.status == filters.status)
    if filters.recipient is not None:
        framed = f"\n{filters.recipient}\n"
        query = query.where(Email.recipients_text.contains(framed, autoescape=True))
    # As the API shows created_at, to the millisecond: an email is not "created after"
    # the created_at it reports itself.
    if filters.created_after is not None:
        after = _floor_ms(filters.created_after) + timedelta(milliseconds=1)
        query = query.where(Email.created_at >= after)
    if filters.created_before is not None:
        before = filters.created_before
        aligned = _floor_ms(before)
        bound = aligned if aligned == before else aligned + timedelta(milliseconds=1)
        query = query.where(Email.created_at < bound)
    for name, value in filters.tags:
        query = query.where(_has_tag(dialect, name, value))
    return query


async def list_emails(
    session: AsyncSession, team_id: str, filters: EmailFilters, page: PageRequest
) -> Page[Email]:
    # The list is light: bodies stay in the database.
    query = (
        select(Email)
        .where(Email.team_id == team_id)
        .options(defer(Email.html), defer(Email.text), defer(Email.headers))
    )
    query = filtered(query, filters, session.get_bind().dialect.name)
    return await paginate(session, query, Email, page)


async def owned_email(session: AsyncSession, team_id: str, email_id: str) -> Email:
    """The team's email row (404 for an unknown or foreign id)."""
    return await get_owned(session, Email, team_id, email_id, "Email")


async def get_email(
    session: AsyncSession, team_id: str, email_id: str
) -> tuple[Email, list[EmailEvent]]:
    """The team's email and its events, oldest first (404 for an unknown or foreign id)."""
    email = await owned_email(session, team_id, email_id)
    events = await session.scalars(
        select(EmailEvent)
        .where(EmailEvent.email_id == email.id)
        .order_by(EmailEvent.created_at, EmailEvent.id)
    )
    return email, list(events.all())


@dataclass(frozen=True)
class AttachmentInfo:
    """An attachment without its bytes: whether it has stored bytes, and their size."""

    attachment: EmailAttachment
    stored_size: int | None  # None: no stored bytes (a `path` attachment)


def _attachments_query() -> Select[tuple[EmailAttachment, int | None]]:
    return select(EmailAttachment, func.length(EmailAttachment.content)).options(
        defer(EmailAttachment.content)
    )


async def list_attachments(
    session: AsyncSession, team_id: str, email_id: str
) -> list[AttachmentInfo]:
    """Every attachment of the team's email, in the order they were given."""
    email = await owned_email(session, team_id, email_id)
    rows = await session.execute(
        _attachments_query()
        .where(EmailAttachment.email_id == email.id)
        .order_by(EmailAttachment.created_at, EmailAttachment.id)
    )
    return [AttachmentInfo(attachment, size) for attachment, size in rows.tuples()]


async def get_attachment(
    session: AsyncSession, team_id: str, email_id: str, attachment_id: str
) -> AttachmentInfo:
    email = await owned_email(session, team_id, email_id)
    if is_uuid(attachment_id):
        rows = await session.execute(
            _attachments_query().where(
                EmailAttachment.id == attachment_id, EmailAttachment.email_id == email.id
            )
        )
        for attachment, size in rows.tuples():
            return AttachmentInfo(attachment, size)
    raise NotFound("Attachment not found.")


async def attachment_for_download(session: AsyncSession, attachment_id: str) -> EmailAttachment:
    """An attachment named by a download link (the signature is the authority, not a key)."""
    attachment = await session.get(EmailAttachment, attachment_id)
    if attachment is None or attachment.content is None:
        raise NotFound("Attachment not found.")
    return attachment


# Views


def _addresses(values: Sequence[str] | None) -> list[str]:
    return list(values or [])


def email_summary(email: Email) -> dict[str, Any]:
    """A list item: the email without bodies and events."""
    return {
        "id": email.id,
        "message_id": email.message_id,
        "from": email.from_address,
        "to": _addresses(email.to),
        "cc": _addresses(email.cc),
        "bcc": _addresses(email.bcc),
        "reply_to": _addresses(email.reply_to),
        "subject": email.subject,
        "status": email.status,
        "last_event": email.last_event,
        "created_at": isoformat_ms(email.created_at),
        "scheduled_at": isoformat_ms(email.scheduled_at),
        "sent_at": isoformat_ms(email.sent_at),
        "tags": list(email.tags or []),
    }


def event_view(event: EmailEvent) -> dict[str, Any]:
    view: dict[str, Any] = {"type": event.type, "created_at": isoformat_ms(event.created_at)}
    if event.data:
        view["data"] = dict(event.data)
    return view


def recipients_view(email: Email) -> list[dict[str, str]]:
    """Each address the email names and where it stands: the delivery worker's state for
    it (one envelope a recipient; ``retrying`` reads ``delivery_delayed``), the email's
    status before any attempt (or for a recipient it does not track: a simulated one),
    ``suppressed`` for an address the suppression list kept out."""
    states = email.recipient_states or {}
    delivered_to = set(email.delivery_recipients or ())
    view = []
    for address in (email.recipients_text or "").split("\n"):
        if not address:
            continue
        if address not in delivered_to:
            status = "suppressed"
        else:
            state = states.get(address, email.status)
            status = "delivery_delayed" if state == "retrying" else state
        view.append({"email": address, "status": status})
    return view


def email_view(email: Email, events: Sequence[EmailEvent]) -> dict[str, Any]:
    return {
        "object": "email",
        **email_summary(email),
        "html": email.html,
        "text": email.text,
        "recipients": recipients_view(email),
        "events": [event_view(event) for event in events],
    }


def attachment_view(
    info: AttachmentInfo, *, base_url: str, secret: bytes, now: datetime
) -> dict[str, Any]:
    attachment = info.attachment
    if info.stored_size is not None:
        # Whole seconds: the link carries its expiry in seconds.
        expires_at = (now + DOWNLOAD_LIFETIME).replace(microsecond=0)
        url: str | None = download_url(base_url, secret, attachment.id, expires_at)
        expires: str | None = isoformat_ms(expires_at)
    else:
        url, expires = attachment.path, None
    return {
        "id": attachment.id,
        "filename": attachment.filename,
        "content_type": attachment.content_type,
        "content_id": attachment.content_id,
        "content_disposition": "inline" if attachment.content_id else "attachment",
        "size": attachment.size if attachment.size is not None else info.stored_size,
        "download_url": url,
        "expires_at": expires,
    }
