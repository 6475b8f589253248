"""What a delivery provider is, and what an attempt can come to.

Delivering exactly once needs a *point of no return* the database can be told about
first. Every provider splits a delivery in two:

1. :meth:`Provider.prepare` does everything that can still be taken back — the SMTP
   envelope and the message content without its final ``.``, or the outbox file
   under a temporary name — and returns a :class:`Handover` (or an outcome, when the
   attempt already failed);
2. the caller commits "sent" to the database, then calls :meth:`Handover.complete`
   synchronously (write the terminating ``.``, rename the file), and only then awaits
   :meth:`Handover.outcome`. If the commit fails, :meth:`Handover.abandon` makes
   sure nothing is delivered.

A process killed before the commit leaves nothing delivered (the relay discards an
unterminated DATA, a temporary file is not in the outbox); killed after it, the
email is already ``sent`` and :meth:`Provider.settle` finishes or accounts for the
handover instead of delivering again. Between the commit and :meth:`Handover.complete`
lies however long the event loop takes to see the commit return (under load, a few
milliseconds), so a provider whose completion cannot be redone later (SMTP: the
connection is gone) leaves evidence as it completes — a *receipt*, see ``receipts``
— and :meth:`Provider.settle` goes by it: completed → delivered; not completed →
delivered again, which is safe because the relay discarded the unterminated message.
What remains is the instant between filing the receipt (a memory copy) and the
completing write, with no system call in between.

Outcomes:

- :class:`Accepted` — the provider took the message (some recipients may have been
  refused permanently: ``rejected``);
- :class:`TemporaryFailure` — 4xx, connection trouble before the handover: retry
  later (``delivery_delayed``); with ``recipients``, those addresses were deferred;
- :class:`PermanentFailure` — 5xx: with ``recipients``, those addresses bounced (and
  join the suppression list); without, the message itself failed (``failed``);
- :class:`Unconfirmed` — handed over but the answer was lost (the connection broke
  after the terminator): delivering again could deliver twice, so it is not retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Delivery:
    """One attempt at one email: who it is from and to, and who is making the attempt."""

    email_id: str
    sender: str  # the envelope sender (MAIL FROM), where bounces go
    recipients: tuple[str, ...]
    # The lease owner making the attempt (for settle: the one that made the handover);
    # names the attempt's temporary state and evidence.
    attempt: str
    attempt_number: int = 0  # the email's ``attempts`` when this attempt claimed it
    # Which of the email's envelopes this is: its first recipient's place among the
    # email's (receipts tell the envelopes of one attempt apart by it).
    envelope: int = 0

    @property
    def needs_smtputf8(self) -> bool:
        return not all(address.isascii() for address in (self.sender, *self.recipients))


@dataclass(frozen=True)
class Accepted:
    reply: str = ""
    rejected: Mapping[str, str] = field(default_factory=dict)  # refused recipient → reply
    confirmed: bool = True  # False: settled after a crash, the provider's answer never read


@dataclass(frozen=True)
class TemporaryFailure:
    reason: str
    retry_now: bool = False  # nothing was handed over: try again at once, not after a backoff
    # Deferred at RCPT (these addresses); empty: the message or the connection was.
    recipients: tuple[str, ...] = ()


@dataclass(frozen=True)
class PermanentFailure:
    reason: str
    recipients: tuple[str, ...] = ()  # bounced addresses; empty: the message failed

    @property
    def bounced(self) -> bool:
        return bool(self.recipients)


@dataclass(frozen=True)
class Unconfirmed:
    reason: str


Outcome = Accepted | TemporaryFailure | PermanentFailure | Unconfirmed
OUTCOME_TYPES = (Accepted, TemporaryFailure, PermanentFailure, Unconfirmed)


class Handover(Protocol):
    def complete(self) -> None:
        """Pass the point of no return. Synchronous and immediate: called right after
        the commit that recorded the email as sent, with nothing awaited in between."""
        ...

    def abandon(self) -> None:
        """The handover was not committed: make sure the message is never delivered."""
        ...

    async def outcome(self) -> Outcome:
        """What the provider answered once the handover completed."""
        ...


class Provider(Protocol):
    name: str
    # Whether each recipient gets an envelope (a transaction, a return path) of its own:
    # per-recipient outcomes and return paths that speak for one recipient alone.
    per_recipient: bool

    async def prepare(self, delivery: Delivery, message: bytes) -> Handover | Outcome:
        """Everything short of the point of no return; an outcome when that already failed."""
        ...

    async def settle(self, delivery: Delivery) -> Outcome:
        """A handover whose process died before recording the outcome (``delivery``
        names the attempt that made it): finish it or say what became of it, never
        deliver it a second time."""
        ...

    async def close(self) -> None:
        """Release connections and the like."""
        ...
