"""Send steps' emails through the transactional pipeline, inside the engine's transaction.

Each email goes through the same checks as POST /emails (``prepare_email``: domain,
addresses, reserved and simulator recipients), is marked marketing for the
unsubscribe headers, and is stored with :func:`email_acceptance.store` at commit —
with the run's state change, so a send step sends once. Its id is derived from the
run and step, which makes a second attempt at the same step a no-op even across
transactions. Quota: a send that would exceed the plan waits an hour (the step is
retried); a recipient on the suppression list is skipped.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.ports import OutgoingEmail, SendRefused
from mailbridge.errors import ApiError, DailyQuotaExceeded, MonthlyQuotaExceeded
from mailbridge.mail import templating
from mailbridge.services import polls, suppressions
from mailbridge.services.accounts import Principal, QuotaLedger, lock_teams, locks_last
from mailbridge.services.email import SendEmailRequest, SendJob, prepare_email, store_email
from mailbridge.services.kernel import ServiceContext
from mailbridge.services.polls import Voter

_EMAIL_IDS = uuid.UUID("5b0b8d0e-3f5c-4c1e-9a57-6d1c1b7e0a11")
QUOTA_RETRY = timedelta(hours=1)


def email_id_for(key: str) -> str:
    return str(uuid.uuid5(_EMAIL_IDS, key))


class SQLMailer:
    def __init__(self, session: AsyncSession, context: ServiceContext) -> None:
        self.session = session
        self.context = context
        self._jobs: list[SendJob] = []
        self._ids: set[str] = set()
        self._ledgers: dict[str, QuotaLedger] = {}
        self._lists: dict[str, set[str]] = {}

    async def send(self, email: OutgoingEmail) -> str:
        email_id = email_id_for(email.key)
        # The id is the run's and step's: a second send of it in another transaction is
        # impossible (the step's record commits with it) and would fail the insert anyway.
        if email_id in self._ids:
            return email_id
        contact = email.contact
        html, text = await self._bodies(email)
        payload = {
            "from": email.from_address,
            "to": [email.to],
            "reply_to": email.reply_to or [],
            "subject": templating.render(email.subject, email.variables, contact=contact),
            "html": html,
            "text": text,
            "tags": [{"name": "automation_id", "value": email.automation_id}],
        }
        return await self._accept(
            email.team_id, email_id, payload, marketing=True, contact_id=contact.get("id")
        )

    async def send_composed(self, team_id: str, key: str, payload: dict[str, Any]) -> str:
        """An email composed elsewhere — an inbox's forward — as ``POST /emails`` takes
        it: not marketing (no unsubscribe headers); the same ``key`` answers the same id."""
        email_id = email_id_for(key)
        if email_id in self._ids:
            return email_id
        return await self._accept(team_id, email_id, payload, marketing=False, contact_id=None)

    async def _accept(
        self, team_id: str, email_id: str, payload: dict[str, Any], *, marketing: bool,
        contact_id: str | None,
    ) -> str:  # fmt: skip
        now = self.context.clock.now()
        try:
            body = SendEmailRequest.model_validate(payload)
        except PydanticValidationError as invalid:
            problems = "; ".join(str(error["msg"]) for error in invalid.errors())
            raise SendRefused(f"the email is not valid: {problems}") from None
        principal = Principal(team_id=team_id, plan="")
        try:
            prepared = await prepare_email(
                self.session, self.context, principal, body, now,
                marketing=marketing, contact_id=contact_id,
            )  # fmt: skip
            prepared.apply_suppression_list(await self._suppressed(team_id))
            ledger = await self._ledger(team_id)
            ledger.charge(team_id, prepared.charged_recipients)
        except (DailyQuotaExceeded, MonthlyQuotaExceeded) as refusal:
            raise SendRefused(refusal.message, retry_at=now + QUOTA_RETRY) from refusal
        except ApiError as refusal:
            skip = "suppressed" in refusal.message
            raise SendRefused(refusal.message, skip=skip) from refusal
        prepared.row["id"] = email_id
        for attachment in prepared.attachments:
            attachment["email_id"] = email_id
        domain = str(prepared.row["message_id"]).rsplit("@", 1)[-1]
        prepared.row["message_id"] = f"<{email_id}@{domain}"
        self._jobs.append(SendJob(team_id, [prepared]))
        self._ids.add(email_id)
        return email_id

    async def _bodies(self, email: OutgoingEmail) -> tuple[str | None, str | None]:
        """The html and text for the run's contact: variables, and the vote links of the
        polls the template embeds (a poll deleted since the graph was written renders as
        nothing)."""
        contact = email.contact

        def render(source: str, *, as_html: bool = False) -> str:
            return templating.render(source, email.variables, contact=contact, html=as_html)

        links = await polls.poll_links(
            self.session, self.context, email.team_id, [email.html, email.text],
            strict=False, writing=True,
        )  # fmt: skip
        if links is None:
            return (
                render(email.html, as_html=True) if email.html else None,
                render(email.text) if email.text else None,
            )
        voter = Voter.of(str(contact.get("id") or "") or None, email.to)
        html = (
            links.render(email.html, voter, html=True, around=lambda p: render(p, as_html=True))
            if email.html
            else None
        )
        text = links.render(email.text, voter, around=render) if email.text else None
        return html, text

    async def _suppressed(self, team_id: str) -> set[str]:
        """The team's suppression list, read once a transaction (not once an email)."""
        if team_id not in self._lists:
            self._lists[team_id] = await suppressions.listed_addresses(self.session, team_id)
        return self._lists[team_id]

    async def _ledger(self, team_id: str) -> QuotaLedger:
        """The team's usage for the checks made when an email is asked for; on PostgreSQL
        read without the lock (:func:`~mailbridge.services.email.store` takes it last and
        checks again), so a runner does not hold it across its whole transaction."""
        if team_id not in self._ledgers:
            if not locks_last(self.session):
                await lock_teams(self.session, [team_id])
            self._ledgers[team_id] = await QuotaLedger.load(
                self.session, self.context.clock.now(), [team_id]
            )
        return self._ledgers[team_id]

    async def flush(self) -> bool:
        """Store the emails asked for; True when some were (the delivery runner has work)."""
        if not self._jobs:
            return False
        jobs, self._jobs = self._jobs, []
        for outcome in await store_email(self.session, self.context.clock, jobs):
            if outcome is not None:  # checked when asked; a refusal now means a race: retry all
                raise outcome
        return True
