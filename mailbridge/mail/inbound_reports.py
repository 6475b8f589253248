"""Facts from a received message: a bounce, a complaint, an auto-reply, the messages it refers to.

Pure functions (no database, no network) over the raw bytes the inbound SMTP listener received.
``parse_report`` never raises: whatever the bytes, it answers a ``Bounce``, a ``Complaint`` or
``None``. By report kind, tried in this order:

1. a feedback report (ARF, RFC 5965): a ``Complaint`` (``_feedback_reports``);
2. a delivery status notification (DSN, RFC 3464): a ``Bounce`` of its failed and delayed
   recipients (``_dsn_reports``, which says how action, address and hard/soft are read -- a
   ``failed`` recipient with a 4.x.x status is soft); a DSN whose recipients were all
   delivered, relayed or expanded is ``None``;
3. any other message that looks like a bounce -- a DSN the reader above could not use among
   them -- goes to the text-bounce detectors (``_text_bounces``: flufl.bounce's, then ours);
   delay and warning notices are bounces whose recipients are all ``delayed`` and soft.

Everything else (replies, auto-replies, success notifications) is ``None``. Which mailbridge
email a report is about is in ``_report_parts``; the ids in addresses and Message-IDs in
``_report_ids``; ``is_auto_reply`` tells machine replies from people's (``_auto_replies``).
"""

from __future__ import annotations

from collections.abc import Sequence
from email.message import Message

from mailbridge.mail._auto_replies import is_auto_reply
from mailbridge.mail._dsn_reports import (
    DSN_TYPES,
    Bounce,
    BouncedRecipient,
    bounce,
    read_delivery_status,
)
from mailbridge.mail._feedback_reports import FEEDBACK_TYPE, Complaint, complaint
from mailbridge.mail._report_ids import message_email_id, referenced_message_ids, verp_email_id
from mailbridge.mail._report_parts import find, parse
from mailbridge.mail._text_bounces import looks_like_bounce, text_bounce_recipients

__all__ = [
    "Bounce",
    "BouncedRecipient",
    "Complaint",
    "is_auto_reply",
    "message_email_id",
    "parse_report",
    "referenced_message_ids",
    "verp_email_id",
]


def parse_report(
    raw: bytes, envelope_recipients: Sequence[str] = (), message: Message | None = None
) -> Bounce | Complaint | None:
    """The bounce or complaint ``raw`` reports, else ``None``; never raises.

    ``envelope_recipients``: the RCPT TO addresses the message was accepted for (a VERP address
    among them names the original email most reliably). ``message``: ``raw`` already parsed
    (any policy: only raw header values are read; it is not parsed again)."""
    try:
        return _parse_report(bytes(raw), envelope_recipients, message)
    except Exception:  # hostile or broken input: no fact rather than an error
        return None


def _parse_report(
    raw: bytes, envelope_recipients: Sequence[str], parsed: Message | None
) -> Bounce | Complaint | None:
    message = parsed if parsed is not None else parse(raw)
    feedback = find(message, (FEEDBACK_TYPE,))
    if feedback is not None:
        return complaint(message, feedback, envelope_recipients)
    per_message: dict[str, str] = {}
    status_part = find(message, DSN_TYPES)
    if status_part is not None:
        status = read_delivery_status(status_part)
        if status.recipients:
            return bounce(message, status.recipients, status.per_message, envelope_recipients)
        if status.all_delivered:
            return None  # a success notification (delivered, relayed, expanded)
        per_message = status.per_message
    if status_part is not None or looks_like_bounce(message):
        recipients = text_bounce_recipients(raw, message)
        if recipients:
            return bounce(message, recipients, per_message, envelope_recipients)
    return None
