"""Recording deliveries: what concurrent deliveries report, one commit for many.

Deliveries hand their news to the :class:`DeliveryJournal` — a handover ready to
complete, an outcome, a simulated delivery — and wait. The journal writes everything
that arrived since its last commit in one transaction, then answers them all; the
next group gathers while it commits and for :data:`GROUP_LINGER` after its first news.
One commit for many keeps the database from capping delivery at one commit per message.

A handover is completed (the SMTP terminator written, the outbox file renamed) right
after the commit that recorded it as ``sent`` returns, for the whole group in one
synchronous loop with nothing awaited in between. The database makes the commit
durable a little before the event loop sees it return (through a driver's thread and
under load, milliseconds: the loop has other callbacks to run first; on a SQLite file,
where the group is written inline by the database's ``SqliteWriter``, microseconds); a
process killed in that gap leaves emails recorded as sent but not handed over, which
the providers' settle step recognises (``mail.providers.base``) and delivers again.

Events are written as rows (``email_events.event_rows``) with the status rule of
``record_email_event``, one executemany per table for the whole group: object by
object, the unit of work would cost more than the rest of a delivery's bookkeeping.

The emails are detached objects whose changes go out by the journal's own UPDATE, so
the journal reads and writes their loaded state (``vars(email)``) rather than through
the ORM's instrumented attributes, whose history for a flush that never comes cost
~13 µs a delivery.

Every write is fenced by the lease: an email whose lease this runner no longer holds
(it ran out and another runner claimed the email) is left alone, and its handover is
not completed — the caller abandons it — so no email is ever handed over twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, or_, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.mail.providers.base import (
    Accepted,
    Handover,
    Outcome,
    PermanentFailure,
    TemporaryFailure,
    Unconfirmed,
)
from mailbridge.mail.providers.simulator import SUPPRESSING_EVENTS, SimulatedRecipient
from mailbridge.services import metrics
from mailbridge.services.email._delivery_queue import PENDING_STATUSES, RetryPolicy
from mailbridge.services.email._events import EVENT_TYPES, STICKY, event_rows
from mailbridge.services.email._suppressions import suppress, suppression_row
from mailbridge.storage.database import Database
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import ActivityEvent, Email, EmailEvent, Suppression

logger = logging.getLogger(__name__)

# Once news arrives, the journal waits this long (seconds) for more before it commits.
# Committing at once made groups of ~8 entries under load; every commit rewrites the
# pages it touches (the tail of each table and index), and lingering halved the commits
# of the delivery bench (2,584 -> ~1,300 for 20,000 emails) with less of the runner's
# CPU a delivery. Two milliseconds is nothing beside an SMTP conversation.
GROUP_LINGER = 0.002


@dataclass(eq=False)
class _Entry:
    email: Email
    future: asyncio.Future[bool]
    handover: Handover | None = None
    outcome: Outcome | None = None
    simulated: Sequence[SimulatedRecipient] = field(default_factory=tuple)


class DeliveryJournal:
    def __init__(
        self,
        database: Database,
        clock: Clock,
        owner: str,
        *,
        lease: timedelta,
        retry_policy: RetryPolicy,
        write_lock: asyncio.Lock | None = None,
        linger: float = GROUP_LINGER,
    ) -> None:
        self.database = database
        self.linger = linger
        # SQLite has one writer at a time and makes the others sleep and retry (in
        # steps of milliseconds): writers of one process take turns here instead.
        self.write_lock = write_lock or asyncio.Lock()
        self.clock = clock
        self.owner = owner
        self.lease = lease
        self.retry_policy = retry_policy
        self.commits = 0
        self._pending: list[_Entry] = []
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    # --- what deliveries call -------------------------------------------------------

    async def hand_over(self, email: Email, handover: Handover) -> bool:
        """Record ``email`` as sent and complete ``handover`` right after the commit.
        False: not recorded (lease lost) and not completed — abandon the handover."""
        return await self._submit(_Entry(email, self._future(), handover=handover))

    def submit_handover(self, email: Email, handover: Handover) -> asyncio.Future[bool]:
        """:meth:`hand_over` as a future of the journal's decision: it stands whatever
        happens to the caller, which can shield it and learn the decision even when
        cancelled (a committed handover must never be abandoned)."""
        entry = _Entry(email, self._future(), handover=handover)
        self._pending.append(entry)
        self._arrived.set()
        self.start()  # if not running yet
        return entry.future

    async def record(
        self, email: Email, outcome: Outcome, simulated: Sequence[SimulatedRecipient] = ()
    ) -> bool:
        """Record what became of an attempt (and the simulated recipients' events)."""
        metrics.delivery_attempted(outcome)
        return await self._submit(
            _Entry(email, self._future(), outcome=outcome, simulated=simulated)
        )

    async def record_simulated(self, email: Email, simulated: Sequence[SimulatedRecipient]) -> bool:
        """An email whose recipients are all simulated: sent and its events, at once."""
        metrics.delivery_attempted(None)
        return await self._submit(_Entry(email, self._future(), simulated=simulated))

    # --- the group commit -------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._closing = False
            self._task = asyncio.create_task(self._run(), name=f"delivery-journal:{self.owner}")

    async def stop(self) -> None:
        """Commit what is pending and stop (a commit under way is never interrupted)."""
        if self._task is not None:
            self._closing = True
            self._arrived.set()
            await self._task
            self._task = None
        while self._pending:
            await self._commit_pending()

    def _future(self) -> asyncio.Future[bool]:
        return asyncio.get_running_loop().create_future()

    async def _submit(self, entry: _Entry) -> bool:
        self._pending.append(entry)
        self._arrived.set()
        if self._task is None:  # not started (tests, or stopping): commit at once
            await self._commit_pending()
        return await entry.future

    async def _run(self) -> None:
        while True:
            await self._arrived.wait()
            if self.linger and not self._closing:
                await asyncio.sleep(self.linger)  # let the group fill
            await self._commit_pending()
            if self._closing and not self._pending:
                return

    async def _commit_pending(self) -> None:
        self._arrived.clear()
        group, self._pending = self._pending, []
        if group:
            await self._commit(group)

    async def _commit(self, group: list[_Entry]) -> None:
        if self.database.is_sqlite:
            async with self.write_lock:
                await self._commit_group(group)
        else:
            await self._commit_group(group)

    async def _commit_group(self, group: list[_Entry]) -> None:
        session: AsyncSession | None = None
        writer = self.database.sqlite_writer
        try:
            if writer is not None:
                # One inline transaction; it returns right after COMMIT, without a turn
                # of the event loop between the commit and the handovers below.
                committed = await writer.transaction(
                    lambda connection: self._write_inline(writer, connection, group)
                )
            else:
                session = self.database.session()
                committed = await self._write(session, group)
                await session.commit()
        except BaseException as exc:
            if session is not None:
                with contextlib.suppress(Exception):
                    await session.close()
            for entry in group:
                if not entry.future.done():
                    entry.future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            logger.warning("could not record %d deliveries: %s", len(group), exc)
            return
        # The point of no return for every handover of the group: no await until done.
        for entry in committed:
            if entry.handover is not None:
                entry.handover.complete()
        self.commits += 1
        if session is not None:
            with contextlib.suppress(Exception):
                await session.close()
        for entry in group:
            if not entry.future.done():
                entry.future.set_result(entry in committed)

    async def _write(self, session: AsyncSession, group: list[_Entry]) -> list[_Entry]:
        """The group's writes in ``session``; the entries whose lease held."""
        held = await _fence(session, self.owner, *_fenced(group))
        committed = _committed(group, held)
        writes = _Writes(self.clock.now(), self.lease)
        for entry in committed:
            self._apply(writes, entry)
        await writes.flush(session, self.clock, [entry.email for entry in committed])
        return committed

    def _write_inline(
        self, writer: SqliteWriter, connection: sqlite3.Connection, group: list[_Entry]
    ) -> list[_Entry]:
        """:meth:`_write` inside a :class:`SqliteWriter` transaction."""
        held = _fence_inline(connection, self.owner, *_fenced(group))
        committed = _committed(group, held)
        writes = _Writes(self.clock.now(), self.lease)
        for entry in committed:
            self._apply(writes, entry)
        writes.flush_inline(writer, connection, self.clock, [entry.email for entry in committed])
        return committed

    def _record(
        self, writes: _Writes, email: Email, event_type: str, data: dict[str, Any] | None = None
    ) -> None:
        """``record_email_event``, as rows for the group's executemany (``event_rows``):
        the same event and activity rows, the same status rule."""
        if event_type not in EVENT_TYPES:
            raise ValueError(f"unknown email event {event_type!r}")
        now = writes.now
        event, activity = event_rows(writes.summary(email), event_type, dict(data or {}), now)
        writes.events.append(event)
        if activity is not None:
            writes.activities.append(activity)
        row = vars(email)
        if not (row["status"] in STICKY and event_type not in STICKY):
            row["status"] = row["last_event"] = event_type
        row["updated_at"] = now

    def _apply(self, writes: _Writes, entry: _Entry) -> None:
        email = entry.email
        row = vars(email)
        now = writes.now
        if entry.handover is not None:
            # Kept leased until the outcome is recorded; if this runner dies first, the
            # email comes due at the end of the lease and is settled, not re-sent.
            row["sent_at"] = now
            row["due_at"] = row["lease_until"] = writes.lease_until
            row["handed_over_by"] = self.owner
            self._record(writes, email, "sent")
            return
        _finish(row)
        if entry.outcome is None:  # simulated recipients only
            row["sent_at"] = now
            row["last_error"] = None
            self._record(writes, email, "sent")
        else:
            self._apply_outcome(writes, email, entry.outcome)
        if row["due_at"] is None:
            self._apply_simulated(writes, email, entry.simulated)

    def _apply_outcome(self, writes: _Writes, email: Email, outcome: Outcome) -> None:
        row = vars(email)
        if isinstance(outcome, Accepted):
            row["last_error"] = None
            data: dict[str, object] = {"reply": outcome.reply}
            if not outcome.confirmed:
                data["confirmed"] = False
            self._record(writes, email, "delivered", data)
            for address, reply in outcome.rejected.items():
                self._bounce(writes, email, [address], reply)
        elif isinstance(outcome, TemporaryFailure):
            attempts = row["attempts"]
            delay = timedelta(0) if outcome.retry_now else self.retry_policy.delay_after(attempts)
            row["last_error"] = outcome.reason
            if delay is None:
                reason = f"gave up after {attempts} attempts: {outcome.reason}"
                row["last_error"] = reason
                self._record(writes, email, "failed", {"reason": reason})
                return
            row["due_at"] = writes.now + delay
            self._record(
                writes, email, "delivery_delayed",
                {"reason": outcome.reason, "next_attempt_at": isoformat_ms(row["due_at"])},
            )  # fmt: skip
        elif isinstance(outcome, PermanentFailure):
            row["last_error"] = outcome.reason
            if outcome.bounced:
                self._bounce(writes, email, list(outcome.recipients), outcome.reason)
            else:
                self._record(writes, email, "failed", {"reason": outcome.reason})
        elif isinstance(outcome, Unconfirmed):
            # Stays ``sent``: handed over, answer lost; sending again could deliver twice.
            row["last_error"] = outcome.reason

    def _bounce(self, writes: _Writes, email: Email, recipients: list[str], reason: str) -> None:
        self._record(writes, email, "bounced", {"recipients": recipients, "reason": reason})
        for address in recipients:
            writes.suppressions.append((email.team_id, address, "bounced", email.id))

    def _apply_simulated(
        self, writes: _Writes, email: Email, simulated: Sequence[SimulatedRecipient]
    ) -> None:
        for recipient in simulated:
            for event_type in recipient.events:
                data = {"recipients": [recipient.address], "simulated": True}
                self._record(writes, email, event_type, data)
                reason = SUPPRESSING_EVENTS.get(event_type)
                if reason is not None:
                    writes.suppressions.append((email.team_id, recipient.address, reason, email.id))


class _Writes:
    """The rows a group adds, written with one executemany per table.

    The group is recorded at one instant, ``now``: its rows share the datetime objects,
    so each is converted for the database once (the events of an email keep their order
    by their time-ordered ids)."""

    def __init__(self, now: datetime, lease: timedelta) -> None:
        self.now = now
        self.lease_until = now + lease
        self.events: list[dict[str, Any]] = []
        self.activities: list[dict[str, Any]] = []
        # (team, address, reason, email id): added to the suppression list, once.
        self.suppressions: list[tuple[str, str, str, str]] = []
        self._summaries: dict[str, dict[str, Any]] = {}

    def summary(self, email: Email) -> dict[str, Any]:
        """The email's columns the event rows need (read from the object once)."""
        row = vars(email)
        found = self._summaries.get(row["id"])
        if found is None:
            found = self._summaries[row["id"]] = {key: row[key] for key in _SUMMARY}
        return found

    async def flush(self, session: AsyncSession, clock: Clock, emails: list[Email]) -> None:
        # The emails were never added to the session: their new state goes out as one
        # UPDATE by primary key, not object by object through the unit of work.
        if self.events:
            await session.execute(insert(table_of(EmailEvent)), self.events)
        if self.activities:
            await session.execute(insert(table_of(ActivityEvent)), self.activities)
        for team_id, address, reason, email_id in self.suppressions:
            await suppress(session, clock, team_id, address, reason, email_id)
        if emails:
            await session.execute(update(Email), [_email_state(email) for email in emails])

    def flush_inline(
        self, writer: SqliteWriter, connection: sqlite3.Connection, clock: Clock,
        emails: list[Email],
    ) -> None:  # fmt: skip
        """:meth:`flush` inside a :class:`SqliteWriter` transaction."""
        writer.insert(connection, table_of(EmailEvent), self.events)
        writer.insert(connection, table_of(ActivityEvent), self.activities)
        suppressed = [suppression_row(clock, *added) for added in self.suppressions]
        writer.insert(connection, table_of(Suppression), suppressed, or_ignore=True)
        writer.update(connection, table_of(Email), [_email_state(email) for email in emails])


# The columns of an email its events' rows need, and those a delivery changes.
_SUMMARY = ("id", "team_id", "from_address", "to", "subject", "created_at", "tags")
_STATE = (
    "id", "status", "last_event", "updated_at", "sent_at", "due_at", "lease_owner",
    "lease_until", "handed_over_by", "last_error",
)  # fmt: skip


def _email_state(email: Email) -> dict[str, object]:
    """The columns a delivery changes (``record_email_event`` sets status and times)."""
    row = vars(email)
    return {key: row[key] for key in _STATE}


def _finish(row: dict[str, Any]) -> None:
    """The attempt is over: no lease, nothing due (a retry sets due_at again)."""
    row["due_at"] = row["lease_owner"] = row["lease_until"] = row["handed_over_by"] = None


def _committed(group: list[_Entry], held: set[str]) -> list[_Entry]:
    """The entries whose lease held, with at most one handover an email: a runner whose
    lease ran out during a slow attempt claims the email again itself, and the fence
    (by owner and status) cannot tell its two attempts apart within one group."""
    committed: list[_Entry] = []
    handed_over: set[str] = set()
    for entry in group:
        if entry.email.id not in held:
            continue
        if entry.handover is not None:
            if entry.email.id in handed_over:
                continue
            handed_over.add(entry.email.id)
        committed.append(entry)
    return committed


def _fenced(group: list[_Entry]) -> tuple[list[str], list[str]]:
    """The ids of the group's emails, and of those among them being handed over."""
    ids = [entry.email.id for entry in group]
    return ids, [entry.email.id for entry in group if entry.handover is not None]


def _fence_inline(
    connection: sqlite3.Connection, owner: str, ids: list[str], handovers: list[str]
) -> set[str]:
    """:func:`_fence` inside a :class:`SqliteWriter` transaction. Its ``BEGIN IMMEDIATE``
    holds the database's write lock until the commit, so reading is enough: no other
    writer can take a lease or cancel an email in between (and each row is rewritten
    once, by the update that records the delivery, not twice)."""
    sql = "SELECT id FROM emails WHERE id IN (SELECT value FROM json_each(?)) AND lease_owner = ?"
    parameters: list[Any] = [json.dumps(ids), owner]
    if handovers:
        pending = ", ".join("?" for _ in PENDING_STATUSES)
        sql += f" AND (id NOT IN (SELECT value FROM json_each(?)) OR status IN ({pending}))"
        parameters += [json.dumps(handovers), *PENDING_STATUSES]
    return {email_id for (email_id,) in connection.execute(sql, parameters)}


async def _fence(
    session: AsyncSession, owner: str, ids: list[str], handovers: list[str]
) -> set[str]:
    """The ids among ``ids`` still leased to ``owner``, locked for this transaction; of
    ``handovers``, only those still pending (not canceled meanwhile)."""
    condition = [Email.id.in_(ids), Email.lease_owner == owner]
    if handovers:
        condition.append(or_(Email.id.not_in(handovers), Email.status.in_(PENDING_STATUSES)))
    statement = (
        update(Email)
        .where(*condition)
        .values(lease_owner=owner)
        .returning(Email.id)
        .execution_options(synchronize_session=False)
    )
    return set((await session.scalars(statement)).all())
