"""What the database holds, read when Prometheus scrapes: emails by status, the queues
the runner's workers drain (depth and the age of the oldest due row), runs by
automation and status, and the connection pool's use.

Gauges read at scrape time, not counters moved at each transition: an email changes
status in a dozen places (the writer, the journal, tracking, reports, suppressions),
and a count read from the rows cannot drift from them. Each read is one indexed
``GROUP BY`` or ``COUNT``/``MIN``, in one short read transaction, under
:data:`SCRAPE_TIMEOUT`. A database that does not answer in time — or at all — costs
the scrape those samples, never the scrape: ``mailbridge_database_scrape_up`` says 0
and the process's counters are still served.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.services.email import PENDING_STATUSES
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import (
    AutomationRun,
    Campaign,
    CampaignRecipient,
    Email,
    WebhookDelivery,
)

logger = logging.getLogger(__name__)

SCRAPE_TIMEOUT = 2.0  # seconds for all the reads of one scrape


async def _emails_by_status(session: AsyncSession) -> dict[str, int]:
    rows = await session.execute(select(Email.status, func.count()).group_by(Email.status))
    return {status: int(count) for status, count in rows.tuples()}


async def _runs_by_automation(session: AsyncSession) -> dict[tuple[str, str], int]:
    rows = await session.execute(
        select(AutomationRun.automation_id, AutomationRun.status, func.count()).group_by(
            AutomationRun.automation_id, AutomationRun.status
        )
    )
    return {(automation, status): int(count) for automation, status, count in rows.tuples()}


async def _queues(session: AsyncSession, now: datetime) -> dict[str, tuple[int, datetime | None]]:
    """Per worker's queue: (rows due now, the oldest due time)."""
    due = {
        "emails": select(func.count(), func.min(Email.due_at)).where(
            Email.due_at <= now, Email.status.in_(PENDING_STATUSES)
        ),
        "automation_runs": select(func.count(), func.min(AutomationRun.due_at)).where(
            AutomationRun.status == "running", AutomationRun.due_at <= now
        ),
        "webhook_deliveries": select(func.count(), func.min(WebhookDelivery.due_at)).where(
            WebhookDelivery.due_at <= now
        ),
    }
    found: dict[str, tuple[int, datetime | None]] = {}
    for queue, query in due.items():
        count, oldest = (await session.execute(query)).one()
        found[queue] = (int(count), oldest)
    # Recipients still without an email, in campaigns being sent; the oldest is the
    # campaign longest due to turn its next recipients into emails.
    sending = select(Campaign.id).where(Campaign.status == "sending")
    pending = await session.scalar(
        select(func.count()).where(
            CampaignRecipient.email_id.is_(None),
            CampaignRecipient.campaign_id.in_(sending.scalar_subquery()),
        )
    )
    oldest = await session.scalar(
        select(func.min(Campaign.due_at)).where(
            Campaign.status == "sending", Campaign.due_at <= now
        )
    )
    found["campaign_recipients"] = (int(pending or 0), oldest)
    return found


def _pool_family(database: Database) -> GaugeMetricFamily:
    """This process's pool. On SQLite the pool holds the aiosqlite connections (each a
    thread); the inline writer's own connection is not pooled and not counted."""
    family = GaugeMetricFamily(
        "mailbridge_db_pool_connections",
        "Connections of this process's SQLAlchemy pool, by state",
        labels=["state", "backend"],
    )
    pool = database.engine.sync_engine.pool
    backend = database.engine.dialect.name
    for state, method in (("size", "size"), ("checked_out", "checkedout"),
                          ("idle", "checkedin"), ("overflow", "overflow")):  # fmt: skip
        read = getattr(pool, method, None)
        if callable(read):
            family.add_metric([state, backend], float(read()))
    return family


class _Snapshot(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


async def database_metrics(context: ServiceContext) -> bytes:
    """The scrape-time families in the text format."""
    now = context.clock.now()
    families: list[Metric] = [_pool_family(context.database)]
    up = GaugeMetricFamily(
        "mailbridge_database_scrape_up", "Whether this scrape could read the database's figures"
    )
    try:
        async with asyncio.timeout(SCRAPE_TIMEOUT), context.database.session() as session:
            statuses = await _emails_by_status(session)
            queues = await _queues(session, now)
            runs = await _runs_by_automation(session)
    except Exception as exc:  # a database down or slow must not fail the scrape
        logger.warning("metrics: the database's figures are left out of this scrape: %r", exc)
        up.add_metric([], 0.0)
        families.append(up)
        return _render(families)
    up.add_metric([], 1.0)
    families.append(up)
    by_status = GaugeMetricFamily("mailbridge_emails", "Emails by status", labels=["status"])
    for status, count in sorted(statuses.items()):
        by_status.add_metric([status], float(count))
    depth = GaugeMetricFamily(
        "mailbridge_queue_due", "Rows due now in a worker's queue", labels=["queue"]
    )
    age = GaugeMetricFamily(
        "mailbridge_queue_oldest_due_age_seconds",
        "How long the oldest due row of a worker's queue has waited (0 when none)",
        labels=["queue"],
    )
    for queue, (count, oldest) in queues.items():
        depth.add_metric([queue], float(count))
        waited = (now - oldest).total_seconds() if oldest is not None else 0.0
        age.add_metric([queue], max(0.0, waited))
    run_counts = GaugeMetricFamily(
        "mailbridge_automation_runs",
        "Automation runs by automation id and status",
        labels=["automation", "status"],
    )
    for (automation, status), count in sorted(runs.items()):
        run_counts.add_metric([automation, status], float(count))
    families += [by_status, depth, age, run_counts]
    return _render(families)


def _render(families: list[Metric]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    return generate_latest(registry)
