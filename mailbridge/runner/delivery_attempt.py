"""One delivery attempt of one email: what the delivery worker (``runner.delivery``) does
with each email it claimed, in a task of its own.

Simulated recipients apart, the message is built (attachments fetched, tracking, DKIM);
each recipient still to try gets an envelope of its own when the provider gives them
that (one for all otherwise); each envelope's handover is committed by the journal
before it is completed, and its outcome recorded as it comes; the attempt's end decides
the email's status and its retry. An attempt a dead runner left unsettled first settles
the envelope that runner handed over (by its receipts), then tries the recipients it had
not reached.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from mailbridge.mail.providers.base import (
    OUTCOME_TYPES,
    Delivery,
    Handover,
    Outcome,
    PermanentFailure,
    Provider,
    TemporaryFailure,
)
from mailbridge.mail.providers.simulator import SimulatedRecipient, split_recipients
from mailbridge.services import delivery
from mailbridge.services.delivery import (
    QUEUED,
    BuiltMessage,
    DeliveryJournal,
    MessageBuilder,
    MessageNotBuilt,
    envelope_sender,
    envelopes,
    in_flight,
    states_of,
    to_try,
)
from mailbridge.storage.database import Database
from mailbridge.storage.tables import Domain, Email, EmailAttachment


@dataclass(frozen=True)
class DeliveryAttempt:
    """What an attempt needs of its worker, made when the worker opens."""

    database: Database
    provider: Provider
    journal: DeliveryJournal
    builder: MessageBuilder
    secret: bytes  # the instance secret: return-path tags
    owner: str  # the worker's lease owner name
    test_domain: str  # the mailbox simulator's

    async def run(
        self, email: Email, domain: Domain | None, attachments: Sequence[EmailAttachment],
        handed_over_by: str | None = None,
    ) -> None:  # fmt: skip
        """One attempt: each recipient still to try gets an envelope of its own (when the
        provider gives them that) and its outcome recorded as it comes; the attempt's end
        decides the email's status and its retry. ``handed_over_by``: the attempt is one a
        dead runner left unsettled — its handover in flight is settled first (by the
        receipts of ``handed_over_by``), then the recipients it had not reached are tried."""
        journal = self.journal
        real, simulated = split_recipients(email.delivery_recipients, self.test_domain)
        if not real:
            await journal.record_simulated(email, simulated)
            return
        before = vars(email).get("recipient_states")
        states = states_of(email, real)
        continuing = handed_over_by is not None
        if continuing:
            # Mail handed over before recipients had states went out in one envelope.
            settling = in_flight(states) if before is not None else list(real)
            if settling and not await self._settle(email, domain, settling, real, simulated,
                                                   handed_over_by or ""):  # fmt: skip
                return
        pending = to_try(states, continuing=continuing)
        if not pending:
            await journal.record(email, None, simulated)
            return
        try:
            message = await self._build(email, domain, attachments)
        except MessageNotBuilt as exc:
            await journal.record(email, exc.outcome, simulated, tuple(pending))
            return
        batches = envelopes(pending, self.provider.per_recipient)
        first = not continuing
        for number, envelope in enumerate(batches):
            delivery = Delivery(
                email.id, envelope_sender(email, domain, self.secret, envelope), envelope,
                self.owner, email.attempts, real.index(envelope[0]),
            )  # fmt: skip
            prepared = await self.provider.prepare(delivery, message.content)
            if isinstance(prepared, OUTCOME_TYPES):
                outcome = prepared
            else:
                if not await self._hand_over(email, prepared, envelope, first=first):
                    return
                first = False
                outcome = await prepared.outcome()
            concerns, final = envelope, number == len(batches) - 1
            if _whole_message(outcome):  # the rest would come to the same
                concerns, final = tuple(chain.from_iterable(batches[number:])), True
            if not await journal.record(email, outcome, simulated, concerns, final=final):
                return
            if final:
                return

    async def _settle(
        self, email: Email, domain: Domain | None, settling: list[str], real: list[str],
        simulated: Sequence[SimulatedRecipient], handed_over_by: str,
    ) -> bool:  # fmt: skip
        """Settle the envelope a dead runner handed over; whether the attempt goes on
        (recipients it had not reached yet)."""
        envelope = tuple(settling)
        delivery = Delivery(
            email.id, envelope_sender(email, domain, self.secret, envelope), envelope,
            handed_over_by, email.attempts, real.index(envelope[0]),
        )  # fmt: skip
        outcome = await self.provider.settle(delivery)
        states = vars(email)["recipient_states"]
        again = isinstance(outcome, TemporaryFailure) and outcome.retry_now  # never went out
        more = again or any(states[each] == QUEUED for each in real if each not in envelope)
        recorded = await self.journal.record(email, outcome, simulated, envelope, final=not more)
        return recorded and more

    async def _hand_over(
        self, email: Email, handover: Handover, envelope: tuple[str, ...], *, first: bool
    ) -> bool:
        """Whether the handover was committed (and so completed); abandoned if not."""
        decision = self.journal.submit_handover(email, handover, envelope, first=first)
        try:
            committed = await asyncio.shield(decision)
        except asyncio.CancelledError:
            # The journal may be committing it this very moment: learn its decision
            # before giving up, so a committed handover is never abandoned.
            with contextlib.suppress(Exception):
                if not await decision:
                    handover.abandon()
            raise
        except Exception:
            handover.abandon()
            raise
        if not committed:
            handover.abandon()
        return committed

    async def _build(
        self, email: Email, domain: Domain | None, attachments: Sequence[EmailAttachment]
    ) -> BuiltMessage:
        stored = [attachment.id for attachment in attachments if not attachment.path]
        contents: dict[str, bytes] = {}
        if stored:
            async with self.database.session() as session:
                contents = await delivery.attachment_contents(session, stored)
        return await self.builder.build(email, domain, attachments, contents)


def _whole_message(outcome: Outcome) -> bool:
    """An outcome about the message or the relay rather than one recipient: the
    attempt's other recipients would come to the same."""
    if isinstance(outcome, TemporaryFailure):
        return not outcome.recipients
    return isinstance(outcome, PermanentFailure) and not outcome.bounced
