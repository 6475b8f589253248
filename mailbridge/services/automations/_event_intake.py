"""POST /events/send: a custom event about a contact, answered 202.

In one transaction the engine starts a run of every enabled automation the event
triggers (creating the contact in the automation's audience for a new address) and
makes due every run of the contact waiting for it; the runner takes it from there.
A payload is checked against the event's definition when one exists. A key limited to
a domain starts and resumes only the automations of its domain; others it does not see
(202 all the same).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select

from mailbridge.engine.ports import Event, RunQuotaExceeded
from mailbridge.errors import AutomationQuotaExceeded, ValidationError
from mailbridge.services.accounts import Principal
from mailbridge.services.audiences import normalize_email
from mailbridge.services.automations._backend import SQLBackend, sql_engine
from mailbridge.services.context import ServiceContext
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Contact, EventDefinition
from mailbridge.wire import SPACE, EmailAddress, declared

BUILT_IN_PREFIXES = ("email.", "contact.", "domain.", "automation.", "template.", "poll.")
# A name of theirs, as `event` is read (stripped), for the document.
BUILT_IN_EVENT = f"^[{SPACE}]*(?:" + "|".join(map(re.escape, BUILT_IN_PREFIXES)) + ")"


class SendEventRequest(BaseModel):
    """The body; which contact (``contact_id`` or ``email``, exactly one) is checked here,
    whether it exists and the payload by :func:`send_event`."""

    model_config = ConfigDict(extra="ignore")

    event: Annotated[
        str, Field(min_length=1, max_length=200), declared(**{"not": {"pattern": BUILT_IN_EVENT}})
    ]
    contact_id: str | None = None
    email: EmailAddress | None = None
    payload: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_contact(self) -> SendEventRequest:
        if (self.contact_id is None) == (self.email is None):
            raise ValueError("give exactly one of `contact_id` and `email`")
        return self


def _payload_problems(schema: dict[str, str] | None, payload: dict[str, Any]) -> list[str]:
    # The definitions service owns the rule; imported late so either can load first.
    from mailbridge.services.automations._event_definitions import payload_problems

    return payload_problems(schema, payload)


async def send_event(
    context: ServiceContext, principal: Principal, request: SendEventRequest
) -> dict[str, Any]:
    name = request.event.strip()
    if name.startswith(BUILT_IN_PREFIXES):
        raise ValidationError(f"`{name}` is a built-in event; mailbridge emits it itself.")
    email = normalize_email(request.email) if request.email is not None else None
    # A key limited to a domain reaches only that domain's automations: another's would
    # mail, from there, whomever the event names.
    backend = SQLBackend(context, domain=principal.domain)
    async with backend.transaction() as tx:
        session = tx.session
        definition = await session.scalar(
            select(EventDefinition).where(
                EventDefinition.team_id == principal.team_id, EventDefinition.name == name
            )
        )
        if definition is not None:
            problems = _payload_problems(definition.schema, request.payload)
            if problems:
                raise ValidationError("payload: " + "; ".join(problems))
        if request.contact_id is not None:
            found = is_uuid(request.contact_id) and await session.scalar(
                select(Contact.id).where(
                    Contact.id == request.contact_id, Contact.team_id == principal.team_id
                )
            )
            if not found:
                raise ValidationError(f"No contact with id {request.contact_id}.")
        event = Event(principal.team_id, name, request.contact_id, email, dict(request.payload))
        try:
            emitted = await sql_engine(context).emit_in(tx, event)
        except RunQuotaExceeded as refusal:
            raise AutomationQuotaExceeded(
                f"{refusal} on this plan; nothing was started."
            ) from refusal
        await tx.commit()
    return {
        "object": "event",
        "event": name,
        "runs_started": emitted.started,
        "runs_resumed": emitted.resumed,
    }
