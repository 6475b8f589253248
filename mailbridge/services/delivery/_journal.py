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
the ORM's instrumented attributes, whose history for a flush that never comes slowed
every delivery.

Every write is fenced by the lease: an email whose lease this runner no longer holds
(it ran out and another runner claimed the email) is left alone, and its handover is
not completed — the caller abandons it — so no email is ever handed over twice.
The statements themselves (fence, INSERTs, UPDATE) are in ``_journal_writes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

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
from mailbridge.services.delivery._journal_writes import (
    _committed,
    _Entry,
    _fence,
    _fence_inline,
    _fenced,
    _finish,
    _Writes,
)
from mailbridge.services.delivery._queue import RetryPolicy
from mailbridge.services.delivery._recipients import (
    QUEUED,
    RETRYING,
    SENT,
    final_status,
    waiting,
)
from mailbridge.services.email import EMAIL_EVENT_TYPES, STICKY, event_rows
from mailbridge.services.operations import delivery_attempted
from mailbridge.storage.database import Database
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import Email

logger = logging.getLogger(__name__)

# Once news arrives, the journal waits this long (seconds) for more before it commits.
# Committing at once made small groups under load; every commit rewrites the pages it
# touches (the tail of each table and index), and lingering made far fewer commits in
# the delivery bench, with less of the runner's CPU a delivery. Two milliseconds is
# nothing beside an SMTP conversation.
GROUP_LINGER = 0.002


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

    async def hand_over(
        self, email: Email, handover: Handover, recipients: tuple[str, ...] = (),
        *, first: bool = True,
    ) -> bool:  # fmt: skip
        """Record ``email`` as sent to ``recipients`` and complete ``handover`` right
        after the commit. False: not recorded (lease lost) and not completed — abandon
        the handover. ``first``: the attempt's first handover (its ``sent`` event)."""
        entry = _Entry(email, self._future(), handover=handover, recipients=recipients,
                       first=first)  # fmt: skip
        return await self._submit(entry)

    def submit_handover(
        self, email: Email, handover: Handover, recipients: tuple[str, ...] = (),
        *, first: bool = True,
    ) -> asyncio.Future[bool]:  # fmt: skip
        """:meth:`hand_over` as a future of the journal's decision: it stands whatever
        happens to the caller, which can shield it and learn the decision even when
        cancelled (a committed handover must never be abandoned)."""
        entry = _Entry(email, self._future(), handover=handover, recipients=recipients,
                       first=first)  # fmt: skip
        self._pending.append(entry)
        self._arrived.set()
        self.start()  # if not running yet
        return entry.future

    async def record(
        self, email: Email, outcome: Outcome | None, simulated: Sequence[SimulatedRecipient] = (),
        recipients: tuple[str, ...] = (), *, final: bool = True,
    ) -> bool:  # fmt: skip
        """Record what became of an attempt for ``recipients`` (every recipient, when the
        email's states are not kept), and, when ``final``, the attempt's end (the
        simulated recipients' events). ``None``: nothing more to record but the end."""
        delivery_attempted(outcome)
        entry = _Entry(email, self._future(), outcome=outcome, simulated=simulated,
                       recipients=recipients, final=final)  # fmt: skip
        return await self._submit(entry)

    async def record_simulated(self, email: Email, simulated: Sequence[SimulatedRecipient]) -> bool:
        """An email whose recipients are all simulated: sent and its events, at once."""
        delivery_attempted(None)
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
        self, writes: _Writes, email: Email, event_type: str, data: dict[str, Any] | None = None,
        *, status: bool = True,
    ) -> None:  # fmt: skip
        """``record_email_event``, as rows for the group's executemany (``event_rows``):
        the same event and activity rows, the same status rule. ``status=False``: the
        event leaves the status alone (the attempt's end sets it from the recipients)."""
        if event_type not in EMAIL_EVENT_TYPES:
            raise ValueError(f"unknown email event {event_type!r}")
        now = writes.now
        event, activity = event_rows(writes.summary(email), event_type, dict(data or {}), now)
        writes.events.append(event)
        if activity is not None:
            writes.activities.append(activity)
        row = vars(email)
        if not status:
            row["last_event"] = event_type
        elif not (row["status"] in STICKY and event_type not in STICKY):
            row["status"] = row["last_event"] = event_type
        row["updated_at"] = now

    def _apply(self, writes: _Writes, entry: _Entry) -> None:
        email = entry.email
        row = vars(email)
        now = writes.now
        states: dict[str, str] = row.get("recipient_states") or {}
        if entry.handover is not None:
            # Kept leased until the outcome is recorded; if this runner dies first, the
            # email comes due at the end of the lease and is settled, not re-sent.
            row["sent_at"] = now
            row["due_at"] = row["lease_until"] = writes.lease_until
            row["handed_over_by"] = self.owner
            for address in entry.recipients:
                states[address] = SENT
            if entry.first:
                self._record(writes, email, "sent")
            return
        if entry.outcome is not None:
            self._apply_outcome(writes, email, entry.outcome, entry.recipients, states)
        if not entry.final:
            # More recipients to hand over in this attempt: still leased, nothing to settle.
            row["due_at"] = row["lease_until"] = writes.lease_until
            row["handed_over_by"] = None
            return
        _finish(row)
        if entry.outcome is None and not states:  # simulated recipients only
            row["sent_at"] = now
            row["last_error"] = None
            self._record(writes, email, "sent")
        elif states and waiting(states):
            retry_now = QUEUED in states.values() or (
                isinstance(entry.outcome, TemporaryFailure) and entry.outcome.retry_now
            )
            delay = None if retry_now else self.retry_policy.delay_after(row["attempts"])
            row["due_at"] = now + (delay or timedelta(0))
            row["status"] = "delivery_delayed"
        elif states:
            row["status"] = final_status(states)
        if row["due_at"] is None:
            self._apply_simulated(writes, email, entry.simulated)

    def _apply_outcome(
        self, writes: _Writes, email: Email, outcome: Outcome, recipients: tuple[str, ...],
        states: dict[str, str],
    ) -> None:  # fmt: skip
        """The events of one outcome for ``recipients``, and their states. Without states
        kept (an email recorded as a whole), the events set the status as they go."""
        row = vars(email)
        tracked = bool(states)
        named: dict[str, object] = {"recipients": list(recipients)} if recipients else {}

        def mark(addresses: Sequence[str], state: str) -> None:
            for address in addresses:
                if address in states:
                    states[address] = state

        if isinstance(outcome, Accepted):
            row["last_error"] = None
            taken = [address for address in recipients if address not in outcome.rejected]
            data: dict[str, object] = {"reply": outcome.reply}
            if recipients:
                data["recipients"] = taken
            if not outcome.confirmed:
                data["confirmed"] = False
            self._record(writes, email, "delivered", data, status=not tracked)
            mark(taken, "delivered")
            for address, reply in outcome.rejected.items():
                self._bounce(writes, email, [address], reply, tracked)
                mark([address], "bounced")
        elif isinstance(outcome, TemporaryFailure) and outcome.retry_now and tracked:
            # Nothing was handed over (a dead runner's unterminated message): these
            # recipients are tried again at once, in this attempt if it goes on.
            row["last_error"] = outcome.reason
            mark(recipients, QUEUED)
        elif isinstance(outcome, TemporaryFailure):
            attempts = row["attempts"]
            delay = timedelta(0) if outcome.retry_now else self.retry_policy.delay_after(attempts)
            row["last_error"] = outcome.reason
            if delay is None:
                reason = f"gave up after {attempts} attempts: {outcome.reason}"
                row["last_error"] = reason
                self._record(writes, email, "failed", {"reason": reason, **named},
                             status=not tracked)  # fmt: skip
                mark(recipients, "failed")
                return
            retry_at = writes.now + delay
            if not tracked:
                row["due_at"] = retry_at
            self._record(
                writes, email, "delivery_delayed",
                {"reason": outcome.reason, "next_attempt_at": isoformat_ms(retry_at), **named},
                status=not tracked,
            )  # fmt: skip
            mark(recipients, RETRYING)
        elif isinstance(outcome, PermanentFailure):
            row["last_error"] = outcome.reason
            if outcome.bounced:
                self._bounce(writes, email, list(outcome.recipients), outcome.reason, tracked)
                mark(outcome.recipients, "bounced")
                mark([each for each in recipients if each not in outcome.recipients], "failed")
            else:
                self._record(writes, email, "failed", {"reason": outcome.reason, **named},
                             status=not tracked)  # fmt: skip
                mark(recipients, "failed")
        elif isinstance(outcome, Unconfirmed):
            # Stays ``sent``: handed over, answer lost; sending again could deliver twice.
            row["last_error"] = outcome.reason
            mark(recipients, "unconfirmed")

    def _bounce(
        self, writes: _Writes, email: Email, recipients: list[str], reason: str, tracked: bool
    ) -> None:
        self._record(writes, email, "bounced", {"recipients": recipients, "reason": reason},
                     status=not tracked)  # fmt: skip
        for address in recipients:
            writes.suppressions.append((email.team_id, address, "bounced", email.id))

    def _apply_simulated(
        self, writes: _Writes, email: Email, simulated: Sequence[SimulatedRecipient]
    ) -> None:
        row = vars(email)
        if simulated:
            states = row["recipient_states"] = dict(row.get("recipient_states") or {})
        for recipient in simulated:
            states[recipient.address] = recipient.kind  # delivered, bounced, complained …
            for event_type in recipient.events:
                data = {"recipients": [recipient.address], "simulated": True}
                self._record(writes, email, event_type, data)
                reason = SUPPRESSING_EVENTS.get(event_type)
                if reason is not None:
                    writes.suppressions.append((email.team_id, recipient.address, reason, email.id))
