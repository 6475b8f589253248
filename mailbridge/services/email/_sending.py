"""Sending, scheduling and cancelling email (spec §4.1 to §4.3): the facade the API calls."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.errors import (
    ApiError,
    BatchIncomplete,
    BatchIncompleteUnkeyed,
    NotFound,
    ValidationError,
)
from mailbridge.mail.addresses import domain_of
from mailbridge.services.accounts import Principal, QuotaLedger
from mailbridge.services.email import _idempotency as idempotency
from mailbridge.services.email._acceptance import EmailWriter, SendJob
from mailbridge.services.email._events import record_email_event
from mailbridge.services.email._preparation import PreparedEmail, prepare_email
from mailbridge.services.email._requests import SendEmailRequest
from mailbridge.services.email._scheduling import parse_send_time
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Email

MAX_SEND_BATCH = 100
BATCH_CHUNK = 25
PENDING = ("scheduled", "queued")
SendAnswer = idempotency.StoredAnswer


class _SessionOnFirstUse:
    """Opens its session when first read through: a send whose sending domain is cached
    (and that names no template) reads nothing, and opening and closing a session for
    nothing cost the send path dearly."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._session: AsyncSession | None = None

    def __getattr__(self, name: str) -> Any:
        if self._session is None:
            self._session = self._database.session()
        return getattr(self._session, name)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


@dataclass(frozen=True)
class Refused:
    """An email of a permissive batch that is not sent, and why."""

    index: int
    message: str

    def view(self) -> dict[str, Any]:
        return {"index": self.index, "message": self.message}


async def _prepare_all(
    context: ServiceContext,
    principal: Principal,
    bodies: Sequence[SendEmailRequest | Refused],
    batch: bool,
    permissive: bool,
) -> tuple[list[PreparedEmail], list[Refused]]:
    """The emails prepared; with ``permissive``, the others refused one by one instead
    of the first refusal failing the batch."""
    now = context.clock.now()
    prepared, refused = [], []
    reader = _SessionOnFirstUse(context.database)
    session = cast(AsyncSession, reader)
    try:
        for index, body in enumerate(bodies):
            if isinstance(body, Refused):
                refused.append(body)
                continue
            label = f"emails[{index}]: " if batch else ""
            try:
                prepared.append(
                    await prepare_email(session, context, principal, body, now, label=label)
                )
            except ApiError as problem:
                if not permissive:
                    problem.message = label + problem.message
                    raise
                refused.append(Refused(index, problem.message))
    finally:
        await reader.close()
    return prepared, refused


async def _send_batch(
    context: ServiceContext,
    writer: EmailWriter,
    principal: Principal,
    prepared: list[PreparedEmail],
    reservation: idempotency.Reservation | None,
    errors: list[dict[str, Any]] | None = None,
) -> SendAnswer:
    """Store the batch in chunks, stopping with ``batch_incomplete`` when time runs out."""
    started = time.monotonic()
    body: dict[str, Any] = {"data": [{"id": p.id} for p in prepared]}
    if errors is not None:
        body["errors"] = errors
    complete = SendAnswer(200, body, {})
    if not prepared:  # a permissive batch with no good email: nothing to store but this
        if reservation is not None:
            async with context.database.session() as session:
                await idempotency.complete(session, reservation, complete)
                await session.commit()
        return complete
    async with context.database.session() as session:
        ledger = await QuotaLedger.load(session, context.clock.now(), [principal.team_id])
    ledger.check(principal.team_id, sum(p.charged_recipients for p in prepared))
    chunks = [prepared[i : i + BATCH_CHUNK] for i in range(0, len(prepared), BATCH_CHUNK)]
    sent: list[str] = []
    for number, chunk in enumerate(chunks):
        last = number == len(chunks) - 1
        job = SendJob(principal.team_id, chunk, reservation if last else None, complete)
        try:
            await writer.submit(job)
        except ApiError:
            if not sent:
                raise
            break
        sent += [p.id for p in chunk]
        if last:
            return complete
        if time.monotonic() - started > context.settings.batch_time_budget:
            break
    extra = {"sent": [{"id": email_id} for email_id in sent], "sent_count": len(sent)}
    message = (
        f"The batch ran out of time: {len(sent)} of {len(prepared)} emails were sent "
        "(listed in `sent`); the rest were not."
    )
    if reservation is None:
        raise BatchIncompleteUnkeyed(message, extra=extra)
    incomplete = BatchIncomplete(message, retry_after=5, extra=extra)
    answer = SendAnswer(incomplete.status_code, incomplete.to_envelope(), incomplete.headers)
    async with context.database.session() as session:
        await idempotency.complete(session, reservation, answer)
        await session.commit()
    return answer


async def send_email(
    context: ServiceContext,
    writer: EmailWriter,
    principal: Principal,
    bodies: Sequence[SendEmailRequest | Refused],
    *,
    batch: bool,
    idempotency_key: str | None,
    payload: Any,
    permissive: bool = False,
) -> SendAnswer:
    """POST /emails (``batch`` False, one body) and POST /emails/batch; a permissive
    batch sends its good emails and answers the others in ``errors``."""
    key = idempotency.check_key(idempotency_key)
    if batch and not 1 <= len(bodies) <= MAX_SEND_BATCH:
        raise ValidationError(f"A batch holds 1 to {MAX_SEND_BATCH} emails.")
    reservation = None
    if key is not None:
        endpoint = "emails/batch" if batch else "emails"
        found = await idempotency.begin(
            context.database, context.clock, principal.team_id, key, endpoint,
            idempotency.fingerprint(endpoint + (" permissive" if permissive else ""), payload),
        )  # fmt: skip
        if isinstance(found, idempotency.StoredAnswer):
            return found
        reservation = found
    try:
        prepared, refused = await _prepare_all(context, principal, bodies, batch, permissive)
        if batch:
            errors = [item.view() for item in refused] if permissive else None
            return await _send_batch(context, writer, principal, prepared, reservation, errors)
        answer = SendAnswer(200, {"id": prepared[0].id}, {})
        await writer.submit(SendJob(principal.team_id, prepared, reservation, answer))
        return answer
    except BaseException:
        if reservation is not None:
            await idempotency.release(context.database, reservation)
        raise


async def _pending_email(context: ServiceContext, principal: Principal, email_id: str) -> Email:
    async with context.database.session() as session:
        email = None
        if is_uuid(email_id):
            email = await session.scalar(
                select(Email).where(Email.id == email_id, Email.team_id == principal.team_id)
            )
    if email is None:
        raise NotFound("Email not found.")
    # A key limited to a domain changes only the mail sent from it (its `from`).
    principal.authorize_domain(domain_of(email.from_email))
    return email


async def _transition(
    context: ServiceContext,
    principal: Principal,
    email_id: str,
    event: str,
    values: dict[str, Any],
) -> None:
    """Change a pending email that no runner holds, with its event, or 422."""
    now = context.clock.now()
    team_id = principal.team_id
    await _pending_email(context, principal, email_id)
    async with context.database.session() as session:
        changed = await session.execute(
            update(Email)
            .where(
                Email.id == email_id,
                Email.team_id == team_id,
                Email.status.in_(PENDING),
                or_(Email.lease_until.is_(None), Email.lease_until < now),
            )
            .values(updated_at=now, **values)
        )
        if not getattr(changed, "rowcount", 0):
            raise ValidationError("Only a pending email (scheduled, not yet sent) can be changed.")
        email = await session.get(Email, email_id, populate_existing=True)
        assert email is not None
        data = {"scheduled_at": isoformat_ms(email.scheduled_at)} if event == "scheduled" else {}
        record_email_event(session, context.clock, email, event, data)
        await session.commit()


async def reschedule_email(
    context: ServiceContext, principal: Principal, email_id: str, scheduled_at: str
) -> None:
    instant = parse_send_time(scheduled_at, context.clock.now())
    await _transition(
        context, principal, email_id, "scheduled",
        {"scheduled_at": instant, "due_at": instant, "status": "scheduled"},
    )  # fmt: skip


async def cancel_email(context: ServiceContext, principal: Principal, email_id: str) -> None:
    await _transition(
        context, principal, email_id, "canceled", {"due_at": None, "status": "canceled"}
    )
