"""Activity dispatch: every activity event handed, once, to the consumers that act on it.

Services record activity events (``services.activity.record_event``) in the same
transaction as the change they describe. The runner's dispatcher
(``runner.activity.ActivityDispatcher``) then, in one transaction per batch:

1. claims undispatched events in creation order — ``UPDATE activity_events SET
   dispatched_at = now WHERE id IN (SELECT ... WHERE dispatched_at IS NULL ... LIMIT n
   FOR UPDATE SKIP LOCKED) RETURNING`` on PostgreSQL, the same statement as one write
   transaction on SQLite;
2. passes the batch to every consumer of :func:`default_consumers`, in order, with the
   same session;
3. commits, then calls each consumer's :meth:`ActivityConsumer.dispatched`.

So the events and whatever the consumers added commit together or not at all: a
process killed at any instant neither loses an event nor hands one out twice. A
consumer that raises rolls the batch back; the dispatcher then tries the events one
at a time so that one bad event holds up only itself (it is retried at every poll).

Consumers are registered, not imported: this context's own fan-out comes first, then
the consumer factories other contexts hand to :func:`register_consumer` from their face
(the automations context: its built-in triggers) in the order their faces were loaded.
So this context depends on none of them; they depend on its face.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import ColumnElement, and_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks._fanout import WebhookFanout
from mailbridge.storage.queries import locked
from mailbridge.storage.tables import ActivityEvent

logger = logging.getLogger(__name__)


class ActivityConsumer(Protocol):
    """Something done for activity events: the rows of its own durable work, added in the
    dispatcher's transaction. No network, no files: those belong to the workers that
    act on the rows afterwards (rows first, side effects after)."""

    name: str

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        """Add this consumer's rows for ``events`` (in creation order) to ``session``.

        Never commits or rolls back: the dispatcher commits them with the events'
        ``dispatched_at``. Events of types the consumer ignores are simply skipped.
        Raising rolls the whole batch back.
        """
        ...

    def dispatched(self) -> None:
        """The batch last passed to :meth:`consume` is committed: wake whatever acts on
        the rows it added (a no-op when nothing needs waking)."""
        ...


ConsumerFactory = Callable[[ServiceContext], ActivityConsumer]

# The consumers of other contexts, by name, in the order they were registered.
_registered: dict[str, ConsumerFactory] = {}


def register_consumer(name: str, factory: ConsumerFactory) -> None:
    """Have every dispatcher made from now on run ``factory(context)`` after the webhook
    fan-out (and after the consumers registered before it). A context's face calls this
    when it is imported; registering a name again replaces its factory in place."""
    _registered[name] = factory


def default_consumers(
    context: ServiceContext, *, on_webhook_deliveries: Callable[[], None] | None = None
) -> list[ActivityConsumer]:
    """The consumers every dispatcher runs, in order:

    - ``webhooks`` (``_fanout.py``): one delivery row per enabled webhook subscribed to
      the event's type; ``on_webhook_deliveries`` wakes the webhook worker.
    - then each registered one — ``automations`` (``services.automations``, from its
      face): built-in events start and resume runs; the runner in this process wakes
      when some did.
    """
    return [
        WebhookFanout(on_added=on_webhook_deliveries),
        *(factory(context) for factory in _registered.values()),
    ]


async def claim_undispatched(
    session: AsyncSession, now: datetime, limit: int
) -> list[ActivityEvent]:
    """Stamp up to ``limit`` undispatched events as dispatched at ``now`` and return them,
    oldest first (the caller commits, after its consumers)."""
    pending = (
        select(ActivityEvent.id)
        .where(ActivityEvent.dispatched_at.is_(None))
        .order_by(ActivityEvent.created_at, ActivityEvent.id)
        .limit(limit)
    )
    pending = locked(pending, session, skip_locked=True)
    return await _stamp(session, ActivityEvent.id.in_(pending.scalar_subquery()), now)


async def claim_event(session: AsyncSession, event_id: str, now: datetime) -> list[ActivityEvent]:
    """Stamp one event, if it is still undispatched (the one-at-a-time fallback)."""
    where = and_(ActivityEvent.id == event_id, ActivityEvent.dispatched_at.is_(None))
    return await _stamp(session, where, now)


async def _stamp(
    session: AsyncSession, where: ColumnElement[bool], now: datetime
) -> list[ActivityEvent]:
    statement = (
        update(ActivityEvent)
        .where(where)
        .values(dispatched_at=now)
        .returning(ActivityEvent)
        .execution_options(synchronize_session=False)
    )
    events = list((await session.scalars(statement)).all())
    events.sort(key=lambda event: (event.created_at, event.id))
    return events


async def any_undispatched(session: AsyncSession) -> bool:
    """Whether some event waits (read-only, on the partial index)."""
    found = await session.scalar(
        select(ActivityEvent.id).where(ActivityEvent.dispatched_at.is_(None)).limit(1)
    )
    return found is not None


async def dispatch_batch(
    context: ServiceContext, consumers: Sequence[ActivityConsumer], limit: int
) -> int:
    """Dispatch up to ``limit`` events in one transaction; how many were dispatched."""
    try:
        async with context.database.session() as session:
            events = await claim_undispatched(session, context.clock.now(), limit)
            if not events:
                return 0
            for consumer in consumers:
                await consumer.consume(session, context, events)
            await session.commit()
    except Exception:
        if limit == 1:
            raise
        logger.exception("dispatching a batch of activity events failed; trying one by one")
        return await _dispatch_one_by_one(context, consumers, limit)
    _dispatched(consumers)
    return len(events)


async def _dispatch_one_by_one(
    context: ServiceContext, consumers: Sequence[ActivityConsumer], limit: int
) -> int:
    async with context.database.session() as session:
        ids = list(
            (
                await session.scalars(
                    select(ActivityEvent.id)
                    .where(ActivityEvent.dispatched_at.is_(None))
                    .order_by(ActivityEvent.created_at, ActivityEvent.id)
                    .limit(limit)
                )
            ).all()
        )
    done = 0
    for event_id in ids:
        try:
            async with context.database.session() as session:
                events = await claim_event(session, event_id, context.clock.now())
                for consumer in consumers:
                    await consumer.consume(session, context, events)
                await session.commit()
        except Exception:
            logger.exception("activity event %s could not be dispatched; retried later", event_id)
            continue
        done += len(events)
        _dispatched(consumers)
    return done


def _dispatched(consumers: Sequence[ActivityConsumer]) -> None:
    for consumer in consumers:
        try:
            consumer.dispatched()
        except Exception:
            logger.exception("activity consumer %s failed after a commit", consumer.name)
