"""Contact imports (``POST /contacts/imports``): a CSV file written by a runner, a chunk
at a time, with progress and an error a row.

At upload the file is read whole and checked (``_import_files``): whatever is wrong with
the file or the options is a 422 and nothing is stored. Its rows are then stored in
chunks of ``CHUNK_ROWS`` beside the job (``queued``). A runner takes the oldest job that
is not done and writes its next chunk in one transaction under the team's contact lock
(``contact_lock``): the chunk's contacts, their events, segment memberships and topic
choices, the job's counts and errors, the chunk's deletion and the move to the next
chunk commit together. A runner killed in the middle of a chunk leaves nothing of it;
the next one writes that chunk again from the start — an import resumes where it
stopped, and a row is never written twice.

A row that cannot be written (an invalid address, a value of the wrong type) is
``failed`` with its line and the reason (the first ``MAX_ERRORS_KEPT`` are kept); the
others go on. An address already in the audience is left as it is (``on_conflict:
skip``, the default as Resend's) or updated (``upsert``); a row that changes nothing is
``skipped`` too. A later row
with an address an earlier row of the file had applies over it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ApiError, ContactsBusy, ValidationError
from mailbridge.services.audiences import _topics as topics
from mailbridge.services.audiences._contact_batch import existing_contacts, write_contact
from mailbridge.services.audiences._contact_lock import holding_contact_lock, time_bound
from mailbridge.services.audiences._contacts import (
    MAX_NAME_LENGTH,
    NewContact,
    checked_segments,
    normalize_email,
)
from mailbridge.services.audiences._import_files import (
    ImportOptions,
    flag,
    read_import_file,
    typed_value,
)
from mailbridge.services.audiences._properties import (
    check_contact_properties,
    registered_properties,
)
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned, locked
from mailbridge.storage.tables import (
    Audience,
    Contact,
    ContactImport,
    ContactImportChunk,
    ContactProperty,
    ContactTopic,
    Segment,
    SegmentMember,
    Topic,
)
from mailbridge.storage.types import new_id

CHUNK_ROWS = 500
OFF_LOOP_BYTES = 256 * 1024  # a larger file is read in a thread, off the event loop
MAX_ERRORS_KEPT = 1000
ACTIVE = ("queued", "in_progress")
STATUSES = ("queued", "in_progress", "completed", "failed")


async def create_import(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    audience: Audience,
    data: bytes,
    options: ImportOptions,
) -> ContactImport:
    """Check the file and the options, store the job and its rows (``queued``), commit."""
    registry = await registered_properties(session, team_id)
    choices = await topics.checked_choices(session, team_id, options.topics)
    segment_ids = await checked_segments(session, team_id, audience.id, options.segment_ids)
    if len(data) > OFF_LOOP_BYTES:
        parsed = await asyncio.to_thread(read_import_file, data, options.column_map, registry)
    else:
        parsed = read_import_file(data, options.column_map, registry)
    now = clock.now()
    job = ContactImport(
        id=new_id(),
        team_id=team_id,
        audience_id=audience.id,
        status="queued",
        on_conflict=options.on_conflict,
        property_types=parsed.property_types,
        segment_ids=segment_ids,
        topics=choices,
        total=len(parsed.rows),
        created=0, updated=0, skipped=0, failed=0,
        errors=[],
        chunks=0,
        next_chunk=0,
        created_at=now,
        updated_at=now,
    )  # fmt: skip
    session.add(job)
    await session.flush()
    for seq, start in enumerate(range(0, len(parsed.rows), CHUNK_ROWS)):
        rows = parsed.rows[start : start + CHUNK_ROWS]
        session.add(ContactImportChunk(import_id=job.id, seq=seq, rows=rows))
        job.chunks = seq + 1
    await session.commit()
    return job


def import_view(job: ContactImport) -> dict[str, Any]:
    """As Resend's SDKs type a ``ContactImport``, with the audience and the row errors."""
    return {
        "object": "contact_import",
        "id": job.id,
        "status": job.status,
        "audience_id": job.audience_id,
        "created_at": isoformat_ms(job.created_at),
        "completed_at": isoformat_ms(job.completed_at) if job.completed_at else None,
        "counts": {
            "total": job.total,
            "created": job.created,
            "updated": job.updated,
            "skipped": job.skipped,
            "failed": job.failed,
        },
        "errors": list(job.errors or []),
        "failure": job.failure,
    }


async def get_import(session: AsyncSession, team_id: str, import_id: str) -> ContactImport:
    return await get_owned(session, ContactImport, team_id, import_id, "Contact import")


async def list_imports(
    session: AsyncSession, team_id: str, status: str | None, page: PageRequest
) -> Page[ContactImport]:
    query = select(ContactImport).where(ContactImport.team_id == team_id)
    if status is not None:
        if status not in STATUSES:
            raise ValidationError(f"`status` must be one of {', '.join(STATUSES)}.")
        query = query.where(ContactImport.status == status)
    return await paginate(session, query, ContactImport, page)


async def any_import_due(session: AsyncSession) -> bool:
    found = await session.scalar(
        select(ContactImport.id).where(ContactImport.status.in_(ACTIVE)).limit(1)
    )
    return found is not None


# --- writing a chunk ---------------------------------------------------------------


@dataclass
class _Tally:
    created: int = 0
    updated: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def fail(self, row: Mapping[str, Any], message: str) -> None:
        self.failed += 1
        self.errors.append({"row": row.get("line"), "email": row.get("email"), "message": message})


async def advance_imports(context: ServiceContext) -> bool:
    """Write the next chunk of the oldest import not done; False when none waits (or
    another contact write holds the team's lock: the chunk waits for the next look)."""
    async with context.database.session() as session:
        query = (
            select(ContactImport)
            .where(ContactImport.status.in_(ACTIVE))
            .order_by(ContactImport.created_at)
            .limit(1)
        )
        job = await session.scalar(locked(query, session, skip_locked=True))
        if job is None:
            return False
        chunk = await session.get(ContactImportChunk, (job.id, job.next_chunk))
        registry = await registered_properties(session, job.team_id)
        try:
            async with holding_contact_lock(session, context, job.team_id):
                async with time_bound(session, context.settings.contacts_write_timeout):
                    tally = _Tally()
                    if chunk is not None:
                        await _write_rows(session, context.clock, job, chunk.rows, registry, tally)
                        await session.delete(chunk)
                    _account(job, tally, context.clock)
                    await session.flush()
                await session.commit()
        except ContactsBusy:
            return False
        except IntegrityError:
            # A single write created one of these addresses between our look and our
            # insert; nothing of the chunk was kept, and the next try sees it.
            return False
    return True


def _account(job: ContactImport, tally: _Tally, clock: Clock) -> None:
    now = clock.now()
    job.created += tally.created
    job.updated += tally.updated
    job.skipped += tally.skipped
    job.failed += tally.failed
    room = MAX_ERRORS_KEPT - len(job.errors or [])
    if tally.errors and room > 0:
        job.errors = [*(job.errors or []), *tally.errors[:room]]
    job.next_chunk += 1
    job.updated_at = now
    job.status = "in_progress"
    if job.next_chunk >= job.chunks:
        job.status, job.completed_at = "completed", now


def _new_contact(
    row: Mapping[str, Any], types: Mapping[str, str], registry: Mapping[str, ContactProperty]
) -> tuple[str, NewContact, dict[str, Any]]:
    """A stored row checked: its address, its fields and its properties (422 if not)."""
    raw = row.get("email")
    if not raw:
        raise ValidationError("The row has no email.")
    email = normalize_email(raw)
    fields: dict[str, Any] = {"email": email}
    for name in ("first_name", "last_name"):
        if name in row:
            if len(row[name]) > MAX_NAME_LENGTH:
                raise ValidationError(f"`{name}` is over {MAX_NAME_LENGTH} characters.")
            fields[name] = row[name]
    if "unsubscribed" in row:
        fields["unsubscribed"] = flag(row["unsubscribed"], "unsubscribed")
    values = {
        key: typed_value(types.get(key, "string"), text, f"properties.{key}")
        for key, text in (row.get("properties") or {}).items()
    }
    properties = check_contact_properties(values, registry)
    return email, NewContact(**fields), properties


async def _write_rows(
    session: AsyncSession,
    clock: Clock,
    job: ContactImport,
    rows: Sequence[Mapping[str, Any]],
    registry: Mapping[str, ContactProperty],
    tally: _Tally,
) -> None:
    checked: list[tuple[Mapping[str, Any], str, NewContact, dict[str, Any]]] = []
    for row in rows:
        try:
            checked.append((row, *_new_contact(row, job.property_types, registry)))
        except ApiError as problem:
            tally.fail(row, problem.message)
    contacts = await existing_contacts(
        session,
        job.audience_id,
        list(dict.fromkeys(email for _row, email, _new, _props in checked)),
    )
    now = clock.now()
    kept: list[Contact] = []  # created or matched: they get the job's segments and topics
    for _row, email, new, properties in checked:
        contact = contacts.get(email)
        if contact is not None and job.on_conflict == "skip":
            tally.skipped += 1
            continue
        outcome = write_contact(
            session, clock, job.team_id, job.audience_id, contact, email, new, properties, now
        )
        contacts[email] = outcome.contact
        if outcome.action == "created":
            tally.created += 1
        elif outcome.action == "updated":
            tally.updated += 1
        else:
            tally.skipped += 1
        kept.append(outcome.contact)
    await session.flush()
    await _file_under(session, job, list({contact.id: contact for contact in kept}), now)


async def _file_under(
    session: AsyncSession, job: ContactImport, contact_ids: list[str], now: datetime
) -> None:
    """The job's segments and topic choices for these contacts (those still there: a
    segment or topic deleted since the upload is left out)."""
    if not contact_ids:
        return
    segment_ids = list(
        await session.scalars(select(Segment.id).where(Segment.id.in_(job.segment_ids or [])))
    )
    wanted_topics = {
        topic_id: job.topics[topic_id]
        for topic_id in await session.scalars(
            select(Topic.id).where(Topic.id.in_(list(job.topics or {})))
        )
    }
    members = await _members(session, segment_ids, contact_ids)
    choices = await _choices(session, list(wanted_topics), contact_ids)
    for contact_id in contact_ids:
        for segment_id in segment_ids:
            if (segment_id, contact_id) not in members:
                member = SegmentMember(segment_id=segment_id, contact_id=contact_id, created_at=now)
                session.add(member)
        for topic_id, subscription in wanted_topics.items():
            choice = choices.get((contact_id, topic_id))
            if choice is None:
                choice = ContactTopic(
                    contact_id=contact_id, topic_id=topic_id, subscription=subscription,
                    updated_at=now,
                )  # fmt: skip
                session.add(choice)
            elif choice.subscription != subscription:
                choice.subscription, choice.updated_at = subscription, now


async def _members(
    session: AsyncSession, segment_ids: Sequence[str], contact_ids: Sequence[str]
) -> set[tuple[str, str]]:
    if not segment_ids or not contact_ids:
        return set()
    rows = await session.execute(
        select(SegmentMember.segment_id, SegmentMember.contact_id).where(
            SegmentMember.segment_id.in_(list(segment_ids)),
            SegmentMember.contact_id.in_(list(contact_ids)),
        )
    )
    return {(segment_id, contact_id) for segment_id, contact_id in rows}


async def _choices(
    session: AsyncSession, topic_ids: Sequence[str], contact_ids: Sequence[str]
) -> dict[tuple[str, str], ContactTopic]:
    if not topic_ids or not contact_ids:
        return {}
    rows = await session.scalars(
        select(ContactTopic).where(
            ContactTopic.topic_id.in_(list(topic_ids)),
            ContactTopic.contact_id.in_(list(contact_ids)),
        )
    )
    return {(row.contact_id, row.topic_id): row for row in rows}
