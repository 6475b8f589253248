"""One runner object, two entry points.

``start_in_background()`` runs inside a host's event loop (``mailbridge serve`` starts
it from the API's lifespan); ``run_until_stopped()`` is the ``mailbridge runner``
daemon, which stops on SIGTERM after finishing or releasing what it holds.

Two kinds of work: *workers*, each a queue of due rows driven by the one claim loop
(``runner.claim_loop``: deliveries — ``runner.delivery``; activity events handed to their
consumers — ``runner.activity``; webhook attempts — ``runner.webhooks``; automation runs
— ``runner.automations``; campaigns turned into emails — ``runner.campaigns``; contact
imports written a chunk at a time — ``runner.imports``), and
*ticks*, periodic jobs run by APScheduler 3 with a memory job store — never one job per
row.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from mailbridge.config import Settings
from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.runner.automations import AutomationWorker
from mailbridge.runner.campaigns import CampaignWorker
from mailbridge.runner.delivery import DeliveryWorker, default_render_processes
from mailbridge.runner.imports import ImportWorker
from mailbridge.runner.inbox_agent import InboxAgentWorker
from mailbridge.runner.signals import stop_on_signals
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services import accounts, domains, inboxes
from mailbridge.services.kernel import ServiceContext, record_runner_heartbeat
from mailbridge.services.webhooks import default_consumers
from mailbridge.storage.outages import describe, is_unavailable

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = timedelta(seconds=15)  # GET /health says a runner is alive within 3 of these


class Worker(Protocol):
    name: str

    async def run(self, stopping: asyncio.Event) -> None:
        """Claim and act on due work until ``stopping`` is set; release claims on the way out."""
        ...


@dataclass(frozen=True)
class Tick:
    name: str
    every: timedelta
    job: Callable[[], Awaitable[object]]


def default_ticks(context: ServiceContext) -> list[Tick]:
    retention = timedelta(days=context.settings.request_log_retention_days)

    async def purge_request_logs() -> int:
        return await accounts.purge_old_logs(context.database, context.clock, retention)

    async def recheck_domains() -> int:
        return await domains.recheck_due_domains(context)

    async def heartbeat() -> None:
        await record_runner_heartbeat(context.database, context.clock.now())

    trash_retention = timedelta(days=context.settings.inbox_trash_retention_days)

    async def empty_inbox_trash() -> int:
        return await inboxes.empty_trash(context.database, context.clock, trash_retention)

    # Four runs per interval, so no domain waits much past its interval.
    recheck_every = timedelta(seconds=max(1.0, context.settings.domain_recheck_interval / 4))
    return [
        Tick("purge-request-logs", timedelta(hours=1), purge_request_logs),
        Tick("recheck-domains", recheck_every, recheck_domains),
        Tick("heartbeat", HEARTBEAT_EVERY, heartbeat),
        Tick("empty-inbox-trash", timedelta(hours=1), empty_inbox_trash),
    ]


def stop_grace(settings: Settings) -> float:
    """Seconds deliveries and webhook POSTs in flight get to finish once stopping."""
    return settings.shutdown_timeout * 0.4


def default_workers(context: ServiceContext) -> list[Worker]:
    # SQLite: the automation worker, the dispatcher and the webhook worker take turns at the
    # one write lock here rather than sleeping in SQLite's busy handler.
    write_lock = asyncio.Lock()
    # Work in flight gets part of the shutdown deadline; the rest goes to requests in
    # flight (uvicorn), the last writes and closing the pools.
    grace = stop_grace(context.settings)
    webhooks = WebhookWorker(context, write_lock=write_lock, stop_grace=grace)
    consumers = default_consumers(context, on_webhook_deliveries=webhooks.deliveries_added)
    workers: list[Worker] = [
        DeliveryWorker(context, render_processes=default_render_processes(), stop_grace=grace),
        AutomationWorker(context, write_lock=write_lock),
        CampaignWorker(context, write_lock=write_lock),
        webhooks,
        ActivityDispatcher(context, consumers, write_lock=write_lock),
        ImportWorker(context, write_lock=write_lock),
    ]
    if context.settings.inbox_agent_url:  # no agent: no message is offered to one
        workers.append(InboxAgentWorker(context))
    return workers


class Runner:
    def __init__(
        self,
        context: ServiceContext,
        *,
        workers: list[Worker] | None = None,
        ticks: list[Tick] | None = None,
    ) -> None:
        self.context = context
        self.workers = default_workers(context) if workers is None else list(workers)
        self.ticks = default_ticks(context) if ticks is None else list(ticks)
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._scheduler: AsyncIOScheduler | None = None

    @property
    def running(self) -> bool:
        return self._scheduler is not None

    async def start_in_background(self) -> None:
        if self.running:
            return
        self._stopping.clear()
        scheduler = AsyncIOScheduler(timezone="UTC")
        for tick in self.ticks:
            scheduler.add_job(
                self._run_tick,
                IntervalTrigger(seconds=tick.every.total_seconds()),
                args=[tick],
                id=tick.name,
                name=tick.name,
                coalesce=True,
                max_instances=1,
                # The heartbeat at once (an explicit None would pause the job).
                **({"next_run_time": datetime.now(UTC)} if tick.name == "heartbeat" else {}),
            )
        scheduler.start()
        self._scheduler = scheduler
        self.context.wake_callbacks.append(self.notify)
        self._tasks = [
            asyncio.create_task(worker.run(self._stopping), name=f"worker:{worker.name}")
            for worker in self.workers
        ]
        logger.info("runner started: %d workers, %d ticks", len(self.workers), len(self.ticks))
        if (warning := self.context.settings.public_url_warning) is not None:
            logger.warning(warning)

    async def stop(self) -> None:
        if self._scheduler is None:
            return
        self._stopping.set()
        with suppress(ValueError):
            self.context.wake_callbacks.remove(self.notify)
        self._scheduler.shutdown(wait=False)
        self._scheduler = None
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.context.settle()
        logger.info("runner stopped")

    def notify(self, *names: str) -> None:
        """New due work was stored by this process: wake the workers named (all when none
        is): a wake costs each woken worker a look at the database."""
        for worker in self.workers:
            wake = getattr(worker, "notify", None)
            if wake is not None and (not names or worker.name in names):
                wake()

    async def run_until_stopped(self) -> None:
        stop_requested = asyncio.Event()
        with stop_on_signals(stop_requested.set):
            await self.start_in_background()
            try:
                await stop_requested.wait()
            finally:
                await self.stop()

    async def run_tick_now(self, name: str) -> object:
        """Run one tick at once (operators and tests)."""
        tick = next(t for t in self.ticks if t.name == name)
        return await tick.job()

    async def _run_tick(self, tick: Tick) -> None:
        with suppress(asyncio.CancelledError):
            try:
                await tick.job()
            except Exception as exc:
                if is_unavailable(exc):  # one line: the next tick tries again
                    logger.warning("tick %s: database unavailable (%s)", tick.name, describe(exc))
                else:
                    logger.exception("tick %s failed", tick.name)
