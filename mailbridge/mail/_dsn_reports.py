"""Bounces, and the RFC 3464 delivery status notifications most of them are.

A DSN (Gmail, Outlook/Exchange, Postfix, modern Exim, sendmail) carries a
``message/delivery-status`` (or RFC 6533 ``message/global-delivery-status``) part: one block of
fields about the report, then one per recipient. Each recipient block that reports a failure or
a delay becomes a ``BouncedRecipient``:

- ``action``, normalised to ``"failed"`` or ``"delayed"``: ``Action: failed`` -- and
  ``failure``/``fail``/``error``, which older MTAs and OpenSMTPD write -- is ``failed``;
  ``delayed`` is ``delayed``. Without an ``Action`` (or with one nobody defined) the ``Status``
  class says it: 5.x.x failed, 4.x.x delayed. ``delivered``, ``relayed`` and ``expanded`` (or a
  2.x.x status) are successes, not bounces.
- ``address``: the ``Original-Recipient`` when it is of type ``rfc822`` (or RFC 6533's
  ``utf-8``) -- the address mailbridge sent to, where ``Final-Recipient`` may be the remote
  alias it was forwarded to -- else the ``Final-Recipient``, without its type.
- ``hard`` (stop sending to the address) when the action is ``failed`` and the status is not
  4.x.x; ``delayed`` is always soft. A ``failed`` recipient with a 4.x.x status is **soft**:
  Postfix (``maximal_queue_lifetime``), sendmail and X.400 gateways give up on a message after
  days of temporary errors and say ``failed`` with 4.4.1/4.4.7; the message did bounce (the
  email is marked bounced, soft) but nothing says the address is bad, so it is not suppressed.
  The status class is the receiver's verdict on the address; the action is only the sender's
  verdict on the message.
- ``status`` (the enhanced code) and ``diagnostic`` (``Diagnostic-Code`` without its ``smtp;``
  type, whitespace collapsed) as the report gave them.

A DSN none of whose recipient blocks is usable (no address, no action or status that says
failed or delayed) is not a verdict either way: the caller offers the message to the text-bounce
detectors (``_text_bounces``); one whose recipients were all delivered is ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import Message

from mailbridge.mail._report_ids import (
    address,
    address_type,
    first_token,
    header,
    message_id,
    without_type,
)
from mailbridge.mail._report_parts import original, original_email_id, report_blocks

DSN_TYPES = frozenset({"message/delivery-status", "message/global-delivery-status"})

_STATUS = re.compile(r"([245])\.\d{1,3}\.\d{1,3}")
_MAX_DIAGNOSTIC = 1000
_FAILED = frozenset({"failed", "failure", "fail", "error"})
_SUCCEEDED = frozenset({"delivered", "relayed", "expanded"})
_MAIL_ADDRESS_TYPES = frozenset({"rfc822", "utf-8"})


@dataclass(frozen=True)
class BouncedRecipient:
    address: str
    status: str | None  # the enhanced status code, e.g. "5.1.1"
    action: str | None  # "failed" or "delayed" (normalised; failure/error read as failed)
    diagnostic: str | None  # the remote server's answer, e.g. "550 5.1.1 User unknown"
    hard: bool  # permanent: stop sending to this address


@dataclass(frozen=True)
class Bounce:
    recipients: tuple[BouncedRecipient, ...]  # never empty
    original_message_id: str | None  # "<...>"
    original_email_id: str | None


@dataclass(frozen=True)
class DeliveryStatus:
    """What a delivery-status part says: the failed or delayed recipients, the per-message
    fields, and whether every recipient it names was delivered (a success notification)."""

    recipients: tuple[BouncedRecipient, ...]
    per_message: dict[str, str]
    all_delivered: bool


def read_delivery_status(part: Message) -> DeliveryStatus:
    blocks = report_blocks(part)
    per_message = next((block for block in blocks if not is_recipient_block(block)), {})
    recipient_blocks = [block for block in blocks if is_recipient_block(block)]
    outcomes = [_outcome(block) for block in recipient_blocks]
    return DeliveryStatus(
        recipients=_recipients(recipient_blocks),
        per_message=per_message,
        all_delivered=bool(outcomes) and all(outcome == "delivered" for outcome in outcomes),
    )


def is_recipient_block(block: dict[str, str]) -> bool:
    return any(name in block for name in ("final-recipient", "original-recipient", "action"))


def _status(value: str | None) -> str | None:
    match = _STATUS.match(value.strip()) if value else None
    return match.group(0) if match else None


def _outcome(block: dict[str, str]) -> str | None:
    """``failed``, ``delayed``, ``delivered`` or ``None`` (the block does not say)."""
    action = first_token(block.get("action"))
    if action in _FAILED:
        return "failed"
    if action == "delayed":
        return "delayed"
    if action in _SUCCEEDED:
        return "delivered"
    status = _status(block.get("status"))
    return {"5": "failed", "4": "delayed", "2": "delivered"}.get(status[0]) if status else None


def recipient_address(fields: dict[str, str]) -> str | None:
    """The address a recipient block (or a header block shaped like one) names."""
    original_recipient = fields.get("original-recipient")
    if address_type(original_recipient) in _MAIL_ADDRESS_TYPES:
        found = address(original_recipient)
        if found is not None:
            return found
    return address(fields.get("final-recipient")) or address(original_recipient)


def _diagnostic(value: str | None) -> str | None:
    if not value:
        return None
    text = re.sub(r"\s+", " ", without_type(value)).strip()
    return text[:_MAX_DIAGNOSTIC] or None


def _recipients(blocks: list[dict[str, str]]) -> tuple[BouncedRecipient, ...]:
    recipients: dict[str, BouncedRecipient] = {}
    for block in blocks:
        action = _outcome(block)
        if action not in ("failed", "delayed"):
            continue
        found = recipient_address(block)
        if found is None or found.lower() in recipients:
            continue
        status = _status(block.get("status"))
        recipients[found.lower()] = BouncedRecipient(
            address=found,
            status=status,
            action=action,
            diagnostic=_diagnostic(block.get("diagnostic-code")),
            hard=action == "failed" and not (status is not None and status.startswith("4")),
        )
    return tuple(recipients.values())


def bounce(
    message: Message,
    recipients: tuple[BouncedRecipient, ...],
    per_message: dict[str, str],
    envelope_recipients: Sequence[str],
) -> Bounce:
    """The bounce of ``recipients``, with the original it is about."""
    carried = original(message)
    found_id = message_id(header(carried, "message-id")) if carried is not None else None
    found_id = found_id or message_id(per_message.get("x-original-message-id"))
    email_id = original_email_id(
        message,
        carried,
        envelope_recipients,
        extra_ids=[per_message.get("x-original-message-id")],
        extra_addresses=[per_message.get("x-postfix-sender")],
    )
    return Bounce(recipients=recipients, original_message_id=found_id, original_email_id=email_id)
