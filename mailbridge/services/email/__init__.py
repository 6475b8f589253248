"""Email: from a send request to an accepted message, and what happens to it after.

Owns ``emails``, ``email_attachments``, ``email_events`` and ``idempotency_records``:
acceptance (validation, preparation, the grouped write), idempotency, reading,
tracking (opens, clicks, unsubscribes) and what reports say of a sent email (bounces,
complaints, delays, replies). Delivering an accepted email is the ``delivery``
context's; the addresses never sent to are the ``suppressions`` context's.
"""

from __future__ import annotations

from mailbridge.services.email._acceptance import (
    EmailWriter,
    SendJob,
    store_email,
    store_prepared_rows,
)
from mailbridge.services.email._events import (
    EMAIL_EVENT_TYPES,
    PENDING_STATUSES,
    STICKY,
    event_rows,
)
from mailbridge.services.email._metric_query import GRANULARITIES, MetricsQuery
from mailbridge.services.email._metrics import email_metrics
from mailbridge.services.email._preparation import prepare_email
from mailbridge.services.email._reading import (
    EmailFilters,
    attachment_for_download,
    attachment_view,
    email_summary,
    email_view,
    get_attachment,
    get_email,
    list_attachments,
    list_emails,
    owned_email,
)
from mailbridge.services.email._reports import (
    BouncedAddress,
    record_bounce,
    record_complaint,
    record_delay,
    record_reply,
    reported_email,
)
from mailbridge.services.email._requests import SendEmailRequest, single_lines, texts
from mailbridge.services.email._sending import (
    MAX_SEND_BATCH,
    Refused,
    SendAnswer,
    cancel_email,
    reschedule_email,
    send_email,
)
from mailbridge.services.email._shares import (
    create_share,
    open_share,
    revoke_shares,
    share_lifetime,
    share_view,
)
from mailbridge.services.email._tracking import record_click, record_open, unsubscribe

__all__ = [
    "EMAIL_EVENT_TYPES",
    "GRANULARITIES",
    "MAX_SEND_BATCH",
    "PENDING_STATUSES",
    "STICKY",
    "BouncedAddress",
    "EmailFilters",
    "EmailWriter",
    "MetricsQuery",
    "Refused",
    "SendAnswer",
    "SendEmailRequest",
    "SendJob",
    "attachment_for_download",
    "attachment_view",
    "cancel_email",
    "create_share",
    "email_metrics",
    "email_summary",
    "email_view",
    "event_rows",
    "get_attachment",
    "get_email",
    "list_attachments",
    "list_emails",
    "open_share",
    "owned_email",
    "prepare_email",
    "record_bounce",
    "record_click",
    "record_complaint",
    "record_delay",
    "record_open",
    "record_reply",
    "reported_email",
    "reschedule_email",
    "revoke_shares",
    "send_email",
    "share_lifetime",
    "share_view",
    "single_lines",
    "store_email",
    "store_prepared_rows",
    "texts",
    "unsubscribe",
]
