"""Email: from a send request to a delivered (or refused) message.

Owns ``emails``, ``email_attachments``, ``email_events``, ``idempotency_records`` and
``suppressions``: acceptance (validation, preparation, the grouped write),
idempotency, suppression lists, reading and tracking, and the delivery queue and
journal that the runner's delivery worker claims from and records into.
"""

from __future__ import annotations

from mailbridge.services.email._acceptance import EmailWriter, SendJob, store_prepared_rows
from mailbridge.services.email._acceptance import store as store_email
from mailbridge.services.email._delivery_journal import DeliveryJournal
from mailbridge.services.email._delivery_messages import (
    BuiltMessage,
    MessageBuilder,
    MessageNotBuilt,
    envelope_sender,
)
from mailbridge.services.email._delivery_queue import (
    PENDING_STATUSES,
    ClaimedBatch,
    RetryPolicy,
    attachment_contents,
    owners_holding_leases,
)
from mailbridge.services.email._delivery_queue import RETRY_POLICY as EMAIL_RETRY_POLICY
from mailbridge.services.email._delivery_queue import any_unsettled as any_unsettled_emails
from mailbridge.services.email._delivery_queue import claim as claim_emails
from mailbridge.services.email._delivery_queue import claim_unsettled as claim_unsettled_emails
from mailbridge.services.email._delivery_queue import (
    leases_and_statuses as email_leases_and_statuses,
)
from mailbridge.services.email._delivery_queue import next_due_at as next_email_due_at
from mailbridge.services.email._delivery_queue import release as release_emails
from mailbridge.services.email._events import EVENT_TYPES as EMAIL_EVENT_TYPES
from mailbridge.services.email._preparation import PreparedEmail, prepare_email
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
from mailbridge.services.email._sending import MAX_BATCH as MAX_SEND_BATCH
from mailbridge.services.email._sending import Answer as SendAnswer
from mailbridge.services.email._sending import cancel as cancel_email
from mailbridge.services.email._sending import reschedule as reschedule_email
from mailbridge.services.email._sending import send as send_email
from mailbridge.services.email._suppression_list import MAX_BATCH_SIZE as MAX_SUPPRESSION_BATCH_SIZE
from mailbridge.services.email._suppression_list import (
    add_suppression,
    add_suppressions,
    find_suppression,
    list_suppressions,
    remove_suppression,
    remove_suppressions,
    suppression_summary,
    suppression_view,
)
from mailbridge.services.email._suppressions import listed_addresses
from mailbridge.services.email._tracking import record_click, record_open, unsubscribe

__all__ = [
    "EMAIL_EVENT_TYPES",
    "EMAIL_RETRY_POLICY",
    "MAX_SEND_BATCH",
    "MAX_SUPPRESSION_BATCH_SIZE",
    "PENDING_STATUSES",
    "BouncedAddress",
    "BuiltMessage",
    "ClaimedBatch",
    "DeliveryJournal",
    "EmailFilters",
    "EmailWriter",
    "MessageBuilder",
    "MessageNotBuilt",
    "PreparedEmail",
    "RetryPolicy",
    "SendAnswer",
    "SendEmailRequest",
    "SendJob",
    "add_suppression",
    "add_suppressions",
    "any_unsettled_emails",
    "attachment_contents",
    "attachment_for_download",
    "attachment_view",
    "cancel_email",
    "claim_emails",
    "claim_unsettled_emails",
    "email_leases_and_statuses",
    "email_summary",
    "email_view",
    "envelope_sender",
    "find_suppression",
    "get_attachment",
    "get_email",
    "list_attachments",
    "list_emails",
    "list_suppressions",
    "listed_addresses",
    "next_email_due_at",
    "owners_holding_leases",
    "prepare_email",
    "record_bounce",
    "record_click",
    "record_complaint",
    "record_delay",
    "record_open",
    "record_reply",
    "release_emails",
    "remove_suppression",
    "remove_suppressions",
    "reported_email",
    "reschedule_email",
    "send_email",
    "single_lines",
    "store_email",
    "store_prepared_rows",
    "suppression_summary",
    "suppression_view",
    "texts",
    "unsubscribe",
]
