"""Inboxes: an address on one of the team's receiving domains, read as conversations.

An inbox is found by its id or by its address (the SDK's ``emailAddress`` selector).
Mail to the address stays under ``/emails/receiving`` as before and is also filed in
the inbox (``_filing``): one message, two views. ``unread`` counts the threads of the
``inbox`` folder not yet read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import Conflict, NotFound, ValidationError
from mailbridge.mail.addresses import parse_recipient
from mailbridge.services.domains import receiving_domain
from mailbridge.services.inboxes._search import unindex_threads
from mailbridge.services.kernel import record_event
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Inbox, InboxThread

MAX_NAME_LENGTH = 64  # the SDKs' documented limits
MAX_FROM_NAME_LENGTH = 78
_NOT_IN_A_NAME = re.compile(r"[:<>\x00-\x1f\x7f]")


def _text(value: Any, field: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value.strip()) > limit:
        raise ValidationError(f"`{field}` must be text of at most {limit} characters.")
    return value.strip() or None


def _from_name(value: Any) -> str | None:
    """A plain display name: no colon, angle brackets or control characters."""
    name = _text(value, "from_name", MAX_FROM_NAME_LENGTH)
    if name is not None and _NOT_IN_A_NAME.search(name):
        raise ValidationError("`from_name` must be a plain name: no `:`, `<`, `>` or line breaks.")
    return name


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"`{field}` must be true or false.")
    return value


async def create_inbox(
    session: AsyncSession, clock: Clock, team_id: str, body: Mapping[str, Any]
) -> Inbox:
    raw = body.get("email_address")
    address = parse_recipient(raw) if isinstance(raw, str) else None
    if address is None:
        raise ValidationError("`email_address` must be an email address.")
    address = address.lower()
    if len(address.partition("@")[0]) > 64:
        raise ValidationError("The part of `email_address` before the @ is at most 64 characters.")
    domain = await receiving_domain(session, address.rpartition("@")[2])
    if domain is None or domain.team_id != team_id:
        raise ValidationError(
            f"`email_address` must be on one of your verified receiving domains; "
            f"{address.rpartition('@')[2]} is not."
        )
    if await session.scalar(select(Inbox.id).where(Inbox.email_address == address)):
        raise Conflict("inbox_exists", f"An inbox for {address} already exists.")
    now = clock.now()
    inbox = Inbox(
        team_id=team_id, domain_id=domain.id, email_address=address,
        name=_text(body.get("name"), "name", MAX_NAME_LENGTH) or address,
        from_name=_from_name(body.get("from_name")),
        forwarding=_flag(body.get("forwarding", False), "forwarding"),
        created_at=now, updated_at=now,
    )  # fmt: skip
    session.add(inbox)
    await session.flush()
    _inbox_event(session, clock, inbox, "inbox.created", inbox_view(inbox, 0))
    await session.commit()
    return inbox


def _inbox_event(
    session: AsyncSession, clock: Clock, inbox: Inbox, type_: str, view: dict[str, Any] | None
) -> None:
    """``inbox.created``, ``inbox.updated``, ``inbox.deleted`` (with no view), as the
    SDKs' webhook types have them."""
    data: dict[str, Any] = {"source": "api", "inbox_id": inbox.id}
    if view is not None:
        data["inbox"] = view
    record_event(session, clock, inbox.team_id, type_, data)


async def find_inbox(session: AsyncSession, team_id: str, id_or_address: str) -> Inbox:
    """The team's inbox by id or by address, or 404."""
    if is_uuid(id_or_address):
        condition = Inbox.id == id_or_address
    else:
        condition = Inbox.email_address == id_or_address.strip().lower()
    inbox = await session.scalar(select(Inbox).where(condition, Inbox.team_id == team_id))
    if inbox is None:
        raise NotFound("Inbox not found.")
    return inbox


async def list_inboxes(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Inbox]:
    return await paginate(session, select(Inbox).where(Inbox.team_id == team_id), Inbox, page)


async def update_inbox(
    session: AsyncSession, clock: Clock, inbox: Inbox, changes: Mapping[str, Any]
) -> Inbox:
    if "email_address" in changes and changes["email_address"] != inbox.email_address:
        raise ValidationError("`email_address` cannot be changed; create another inbox.")
    if not changes.keys() & {"name", "from_name", "forwarding"}:
        raise ValidationError("Give `name`, `from_name` or `forwarding`.")
    if changes.get("name") is not None:
        inbox.name = _text(changes["name"], "name", MAX_NAME_LENGTH) or inbox.email_address
    if "from_name" in changes:
        inbox.from_name = _from_name(changes["from_name"])
    if "forwarding" in changes:
        inbox.forwarding = _flag(changes["forwarding"], "forwarding")
    inbox.updated_at = clock.now()
    unread = (await unread_counts(session, [inbox.id])).get(inbox.id, 0)
    _inbox_event(session, clock, inbox, "inbox.updated", inbox_view(inbox, unread))
    await session.commit()
    return inbox


async def delete_inbox(session: AsyncSession, clock: Clock, inbox: Inbox) -> None:
    """The inbox, its threads and labels; the received mail stays under /emails/receiving."""
    threads = await session.scalars(select(InboxThread.id).where(InboxThread.inbox_id == inbox.id))
    await unindex_threads(session, list(threads))
    _inbox_event(session, clock, inbox, "inbox.deleted", None)
    await session.delete(inbox)
    await session.commit()


async def unread_counts(session: AsyncSession, inbox_ids: list[str]) -> dict[str, int]:
    rows = await session.execute(
        select(InboxThread.inbox_id, func.count())
        .where(
            InboxThread.inbox_id.in_(inbox_ids),
            InboxThread.folder == "inbox",
            InboxThread.read.is_(False),
        )
        .group_by(InboxThread.inbox_id)
    )
    return {inbox_id: int(count) for inbox_id, count in rows.tuples()}


def inbox_view(inbox: Inbox, unread: int, drafts: int = 0) -> dict[str, Any]:
    return {
        "object": "inbox",
        "id": inbox.id,
        "name": inbox.name,
        "email_address": inbox.email_address,
        "domain_id": inbox.domain_id,
        "receiving_address": inbox.email_address,
        "from_name": inbox.from_name,
        "unread": unread,
        "drafts": drafts,
        "last_received": isoformat_ms(inbox.last_received),
        "created_at": isoformat_ms(inbox.created_at),
        "updated_at": isoformat_ms(inbox.updated_at),
    }
