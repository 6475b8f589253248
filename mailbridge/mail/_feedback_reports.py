"""Complaints: RFC 5965 feedback reports (ARF).

Yahoo's complaint feedback loop, Microsoft JMRP and most ISP FBLs send a
``message/feedback-report`` part, normally inside ``multipart/report;
report-type=feedback-report``. It gives ``Feedback-Type`` (``abuse``, ``fraud``, ``virus``,
``other``, ``not-spam``, and ``auth-failure`` for DMARC failure reports -- the caller decides
which types count as a complaint; ``unknown`` when the field is missing), ``User-Agent``, and
the complaining recipient from ``Original-Rcpt-To`` (else Microsoft's
``X-HmXmrOriginalRecipient`` in the embedded original, when it is not redacted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from email.message import Message

from mailbridge.mail._report_ids import address, first_token, header, message_id
from mailbridge.mail._report_parts import original, original_email_id, report_blocks

FEEDBACK_TYPE = "message/feedback-report"


@dataclass(frozen=True)
class Complaint:
    feedback_type: str  # lower-case: "abuse", "fraud", ...
    original_message_id: str | None  # "<...>"
    original_email_id: str | None
    original_recipient: str | None
    user_agent: str | None


def complaint(message: Message, feedback: Message, envelope_recipients: Sequence[str]) -> Complaint:
    """The complaint a report's ``feedback`` part makes."""
    fields: dict[str, str] = {}
    for block in report_blocks(feedback):
        for name, value in block.items():
            fields.setdefault(name, value)
    carried = original(message)
    recipient = address(fields.get("original-rcpt-to"))
    if recipient is None and carried is not None:
        recipient = address(header(carried, "x-hmxmroriginalrecipient"))
    return Complaint(
        feedback_type=first_token(fields.get("feedback-type")) or "unknown",
        original_message_id=(
            message_id(header(carried, "message-id")) if carried is not None else None
        ),
        original_email_id=original_email_id(
            message,
            carried,
            envelope_recipients,
            extra_addresses=[fields.get("original-mail-from")],
        ),
        original_recipient=recipient,
        user_agent=fields.get("user-agent") or None,
    )
