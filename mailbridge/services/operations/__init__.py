"""Operations: what an operator reads about the instance, and the counters behind it.

``/health`` and ``/ready`` (``health_report``, ``readiness``), the process's Prometheus
counters and the hooks that move them, the gauges read from the database at scrape
time (``database_metrics``), a team's overview for the dashboard's first page, and its
use of its plan (``team_usage``, ``GET /usage``).
"""

from __future__ import annotations

from mailbridge.services.operations._health import health_report, readiness
from mailbridge.services.operations._metrics import (
    delivery_attempted,
    inbound_message,
    inbound_recipient,
    inbound_unmatched_report,
    observe_request,
    process_metrics,
    webhook_attempted,
)
from mailbridge.services.operations._metrics_scrape import database_metrics
from mailbridge.services.operations._overview import team_overview
from mailbridge.services.operations._usage import team_usage

__all__ = [
    "database_metrics",
    "delivery_attempted",
    "health_report",
    "inbound_message",
    "inbound_recipient",
    "inbound_unmatched_report",
    "observe_request",
    "process_metrics",
    "readiness",
    "team_overview",
    "team_usage",
    "webhook_attempted",
]
