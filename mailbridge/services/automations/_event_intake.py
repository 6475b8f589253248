"""POST /events/send: a custom event about a contact, answered 202 — the SQL half of
``mailbridge.triggers.custom``.

In one transaction the engine starts a run of every enabled automation the event
triggers (creating the contact in the automation's audience for a new address) and
makes due every run of the contact waiting for it; the runner takes it from there. The
rules (built-in names refused, the payload against the event's definition when one
exists, the named contact, the run quota) are the triggers package's; here are the
request, its ports on the database (:class:`SQLEventChecks`) and the transaction. A key
limited to a domain starts and resumes only the automations of its domain; others it
does not see (202 all the same).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.ports import Event
from mailbridge.services.accounts import Principal
from mailbridge.services.audiences import normalize_email
from mailbridge.services.automations._backend import SQLBackend, sql_engine
from mailbridge.services.automations._event_definitions import definition_named, payload_problems
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Contact
from mailbridge.triggers import BUILT_IN_PREFIXES, custom_event_name, emit_custom_event
from mailbridge.wire import SPACE, EmailAddress, declared

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


class SQLEventChecks:
    """What intake looks up (``triggers.CustomEventChecks``), in the event's transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def payload_problems(
        self, team_id: str, name: str, payload: Mapping[str, Any]
    ) -> list[str]:
        definition = await definition_named(self.session, team_id, name)
        return [] if definition is None else payload_problems(definition.schema, payload)

    async def contact_exists(self, team_id: str, contact_id: str) -> bool:
        if not is_uuid(contact_id):
            return False
        found = await self.session.scalar(
            select(Contact.id).where(Contact.id == contact_id, Contact.team_id == team_id)
        )
        return found is not None


async def send_event(
    context: ServiceContext, principal: Principal, request: SendEventRequest
) -> dict[str, Any]:
    name = custom_event_name(request.event)
    email = normalize_email(request.email) if request.email is not None else None
    # A key limited to a domain reaches only that domain's automations: another's would
    # mail, from there, whomever the event names.
    backend = SQLBackend(context, domain=principal.domain)
    async with backend.transaction() as tx:
        event = Event(principal.team_id, name, request.contact_id, email, dict(request.payload))
        checks = SQLEventChecks(tx.session)
        emitted = await emit_custom_event(sql_engine(context), tx, checks, event)
        await tx.commit()
    return {
        "object": "event",
        "event": name,
        "runs_started": emitted.started,
        "runs_resumed": emitted.resumed,
    }
