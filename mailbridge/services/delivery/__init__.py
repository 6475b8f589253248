"""Delivery: from an accepted email to the provider's answer, recorded.

The delivery queue (due emails leased to a runner, unsettled handovers taken back),
the message each email becomes (rendering, tracking links, List-Unsubscribe, DKIM, the
return path), where each recipient stands (one envelope each) and the journal that
records many deliveries' outcomes in one commit. Owns no table of its own: it works the
``emails`` rows the email context accepted, through their status, lease, attempt and
recipient-state columns.
"""

from __future__ import annotations

from mailbridge.services.delivery._journal import DeliveryJournal
from mailbridge.services.delivery._messages import (
    BuiltMessage,
    MessageBuilder,
    MessageNotBuilt,
    envelope_sender,
)
from mailbridge.services.delivery._queue import (
    EMAIL_RETRY_POLICY,
    ClaimedBatch,
    RetryPolicy,
    any_unsettled_emails,
    attachment_contents,
    claim_emails,
    claim_unsettled_emails,
    email_leases_and_statuses,
    next_email_due_at,
    owners_holding_leases,
    release_emails,
)
from mailbridge.services.delivery._recipients import (
    QUEUED,
    envelopes,
    in_flight,
    states_of,
    to_try,
)

__all__ = [
    "EMAIL_RETRY_POLICY",
    "QUEUED",
    "BuiltMessage",
    "ClaimedBatch",
    "DeliveryJournal",
    "MessageBuilder",
    "MessageNotBuilt",
    "RetryPolicy",
    "any_unsettled_emails",
    "attachment_contents",
    "claim_emails",
    "claim_unsettled_emails",
    "email_leases_and_statuses",
    "envelope_sender",
    "envelopes",
    "in_flight",
    "next_email_due_at",
    "owners_holding_leases",
    "release_emails",
    "states_of",
    "to_try",
]
