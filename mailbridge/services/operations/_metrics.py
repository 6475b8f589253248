"""The process's Prometheus counters, and the one-line hooks that move them.

What happens in a process — requests answered, delivery attempts, webhook attempts,
messages received — is counted here, at the moment it happens; what is *in the
database* (emails by status, queues, runs, pool use) is read at scrape time by
``_metrics_scrape``, never counted.

The families are module globals in prometheus-client's default registry, the library's
own convention (and the one multiprocess mode needs: with ``PROMETHEUS_MULTIPROC_DIR``
set, each process writes its samples to files there and any process sums them at
scrape). It is the one thing of mailbridge made at import time. A hook costs a counter
increment — no I/O, no query — since the send and delivery paths call them.
"""

from __future__ import annotations

import os
import re

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from mailbridge.mail.providers.base import (
    Accepted,
    Outcome,
    PermanentFailure,
    TemporaryFailure,
    Unconfirmed,
)

# Seconds; the send path answers in a few milliseconds, a list page in tens.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUESTS = Counter(
    "mailbridge_http_requests",
    "HTTP requests answered, by route template, method and status",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "mailbridge_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template and method",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
DELIVERY_ATTEMPTS = Counter(
    "mailbridge_delivery_attempts",
    "Delivery attempts recorded, by outcome",
    ["outcome"],
)
SMTP_RESPONSES = Counter(
    "mailbridge_smtp_responses",
    "What the relay answered a delivery attempt: 2xx, 4xx, 5xx or transport_error",
    ["class"],
)
WEBHOOK_ATTEMPTS = Counter(
    "mailbridge_webhook_attempts",
    "Webhook POSTs attempted, by result (succeeded, http_error, transport_error)",
    ["result"],
)
INBOUND_MESSAGES = Counter(
    "mailbridge_inbound_messages",
    "Messages offered to the SMTP listener (DATA), by result (accepted, refused, deferred)",
    ["result"],
)
INBOUND_RECIPIENTS = Counter(
    "mailbridge_inbound_recipients",
    "Recipients offered to the SMTP listener (RCPT), by result (accepted, refused, deferred)",
    ["result"],
)
INBOUND_UNMATCHED_REPORTS = Counter(
    "mailbridge_inbound_unmatched_reports",
    "Bounces and complaints received but not acted on, by reason (forged_return_path, "
    "no_email, not_a_recipient, no_recipient)",
    ["reason"],
)

_SMTP_CODE = re.compile(r"\b([245])\d\d\b")


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    HTTP_REQUESTS.labels(route, method, str(status)).inc()
    HTTP_LATENCY.labels(route, method).observe(seconds)


def delivery_attempted(outcome: Outcome | None) -> None:
    """An attempt's outcome handed to the journal (``None``: simulated recipients only)."""
    if outcome is None:
        DELIVERY_ATTEMPTS.labels("simulated").inc()
        return
    label, response = outcome_labels(outcome)
    DELIVERY_ATTEMPTS.labels(label).inc()
    if response is not None:
        SMTP_RESPONSES.labels(response).inc()


def outcome_labels(outcome: Outcome) -> tuple[str, str | None]:
    """(outcome, SMTP response class); the class is ``None`` when no relay was involved
    (a message that could not be built, an outbox that could not be written)."""
    if isinstance(outcome, Accepted):
        return "delivered", "2xx"
    if isinstance(outcome, Unconfirmed):
        return "unconfirmed", "transport_error"
    found = _SMTP_CODE.search(outcome.reason)
    if isinstance(outcome, TemporaryFailure):
        # Without a code the relay was never heard: refused, unreachable, or cut off.
        return "deferred", f"{found.group(1)}xx" if found else "transport_error"
    assert isinstance(outcome, PermanentFailure)
    label = "bounced" if outcome.bounced else "failed"
    return label, f"{found.group(1)}xx" if found else None


def webhook_attempted(status_code: int | None) -> None:
    if status_code is None:
        WEBHOOK_ATTEMPTS.labels("transport_error").inc()
    elif 200 <= status_code < 300:
        WEBHOOK_ATTEMPTS.labels("succeeded").inc()
    else:
        WEBHOOK_ATTEMPTS.labels("http_error").inc()


def _reply_result(reply: str) -> str:
    return {"2": "accepted", "4": "deferred"}.get(reply[:1], "refused")


def inbound_message(reply: str) -> str:
    """Count the listener's answer to DATA; the answer, unchanged."""
    INBOUND_MESSAGES.labels(_reply_result(reply)).inc()
    return reply


def inbound_recipient(reply: str) -> str:
    """Count the listener's answer to RCPT; the answer, unchanged."""
    INBOUND_RECIPIENTS.labels(_reply_result(reply)).inc()
    return reply


def inbound_unmatched_report(reason: str) -> None:
    """A report stored but not acted on (``services.inbound``'s trust rule), committed."""
    INBOUND_UNMATCHED_REPORTS.labels(reason).inc()


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def process_metrics() -> bytes:
    """The counters in the text format: this process's, or, in multiprocess mode, every
    process's that writes to ``PROMETHEUS_MULTIPROC_DIR``, summed."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest()
