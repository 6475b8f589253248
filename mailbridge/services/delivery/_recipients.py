"""Where each recipient of an email stands (``emails.recipient_states``).

A provider that gives every recipient an envelope of its own (SMTP: one transaction
each, with a return path tagged for that recipient alone) reports on each recipient
apart, and the delivery worker tries only those not yet delivered: one deferred
recipient no longer holds back the others, and none gets a second copy when another is
retried. The states:

- ``queued``: not tried yet;
- ``retrying``: deferred (4xx, or the relay out of reach); tried again after the backoff;
- ``sent``: handed over, the answer not yet recorded (a runner that dies here leaves it
  to be settled by its receipt: ``mail.providers.receipts``);
- ``delivered``, ``bounced``, ``failed``, ``unconfirmed``: what the attempt came to;
- ``delivery_delayed``, ``complained``: what a report received later said of a recipient
  the relay had taken (``services.inbound``); ``bounced`` too.

Only ``queued`` and ``retrying`` are attempted. While any recipient is, the email keeps
``due_at`` and a status the queue claims (``delivery_delayed``); when none is, its status
says the worst of what became of them: bounced, failed, delivered, sent (unconfirmed).
"""

from __future__ import annotations

from collections.abc import Sequence

from mailbridge.storage.tables import Email

QUEUED = "queued"
RETRYING = "retrying"
SENT = "sent"
TO_TRY = frozenset({QUEUED, RETRYING})
# The status of an email none of whose recipients waits, by its recipients' states: the
# first found wins.
_FINAL_STATUSES = (
    ("bounced", "bounced"),
    ("complained", "complained"),
    ("failed", "failed"),
    ("delivered", "delivered"),
    ("delivery_delayed", "delivered"),
    ("unconfirmed", "sent"),
    ("sent", "sent"),
)


def states_of(email: Email, real: Sequence[str]) -> dict[str, str]:
    """The email's states for its real recipients (a new dict: ``queued`` for one not
    yet attempted), set on the email's loaded state for the delivery journal to write."""
    stored = vars(email).get("recipient_states") or {}
    states = {address: stored.get(address, QUEUED) for address in real}
    vars(email)["recipient_states"] = states
    return states


def to_try(states: dict[str, str], *, continuing: bool) -> list[str]:
    """The recipients an attempt tries: ``queued`` ones, and ``retrying`` ones unless the
    attempt is one a dead runner left half done (those wait for their backoff)."""
    wanted = {QUEUED} if continuing else TO_TRY
    return [address for address, state in states.items() if state in wanted]


def in_flight(states: dict[str, str]) -> list[str]:
    """Recipients handed over whose answer was never recorded."""
    return [address for address, state in states.items() if state == SENT]


def envelopes(recipients: Sequence[str], per_recipient: bool) -> list[tuple[str, ...]]:
    """One envelope a recipient, or one for all."""
    if per_recipient:
        return [(address,) for address in recipients]
    return [tuple(recipients)] if recipients else []


def waiting(states: dict[str, str]) -> bool:
    return any(state in TO_TRY for state in states.values())


def final_status(states: dict[str, str]) -> str:
    """The status of an email whose recipients are all past their attempts."""
    present = set(states.values())
    return next((status for state, status in _FINAL_STATUSES if state in present), "sent")
