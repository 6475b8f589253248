"""Contacts and segment memberships as the engine sees them (its ``Contacts`` port).

Runs of a claimed batch have their contacts loaded with one query (``expect``);
changes go through the ORM in the engine's transaction and record the same
``contact.*`` activity events as the API's writes, so webhooks and other automations
hear about them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.ports import AutomationRef
from mailbridge.engine.ports import Contact as ContactView
from mailbridge.errors import ApiError
from mailbridge.services.audiences import (
    ContactFields,
    apply_changes,
    check_contact_properties,
    event_data,
    new_contact_row,
    registered_properties,
)
from mailbridge.services.kernel import ServiceContext, record_event
from mailbridge.storage import bulk
from mailbridge.storage.queries import table_of
from mailbridge.storage.tables import (
    ActivityEvent,
    Contact,
    ContactProperty,
    Segment,
    SegmentMember,
)
from mailbridge.storage.types import new_id

_CONTACT_COLUMNS = ("first_name", "last_name", "unsubscribed", "properties", "updated_at")


def contact_dict(contact: Contact) -> ContactView:
    return {
        "id": contact.id,
        "audience_id": contact.audience_id,
        "email": contact.email,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "unsubscribed": contact.unsubscribed,
        "properties": dict(contact.properties or {}),
    }


class SQLContacts:
    def __init__(
        self, session: AsyncSession, context: ServiceContext, scope_domain: str | None = None
    ) -> None:
        self._scope_domain = scope_domain  # a contact made here is that domain's news only
        self.session = session
        self.context = context
        self._rows: dict[str, Contact | None] = {}
        self._expected: set[str] = set()
        self._dirty: set[str] = set()
        self._members: set[tuple[str, str]] = set()
        self._segments: dict[str, str | None] = {}  # segment id -> team id
        self._registries: dict[str, dict[str, ContactProperty]] = {}
        self._activity: list[dict[str, Any]] = []

    def expect(self, contact_ids: list[str]) -> None:
        """These contacts will be asked for: load them together on the first ask."""
        self._expected.update(i for i in contact_ids if i not in self._rows)

    async def _row(self, team_id: str, contact_id: str) -> Contact | None:
        if contact_id not in self._rows:
            wanted = {contact_id, *self._expected}
            self._expected.clear()
            found = {
                row.id: row
                for row in await self.session.scalars(select(Contact).where(Contact.id.in_(wanted)))
            }
            for one in wanted:
                self._rows[one] = found.get(one)
            for loaded in found.values():  # detached: changes go out in flush(), not the ORM's
                self.session.expunge(loaded)
        row = self._rows[contact_id]
        return row if row is not None and row.team_id == team_id else None

    async def find(self, team_id: str, contact_id: str) -> ContactView | None:
        row = await self._row(team_id, contact_id)
        return contact_dict(row) if row is not None else None

    async def about(
        self, team_id: str, contact_id: str | None, email: str | None
    ) -> list[ContactView]:
        if contact_id is not None:
            found = await self.find(team_id, contact_id)
            return [found] if found is not None else []
        if not email:
            return []
        rows = await self.session.scalars(
            select(Contact).where(Contact.team_id == team_id, Contact.email == email.lower())
        )
        return [contact_dict(row) for row in rows]

    async def enroll(
        self, automation: AutomationRef, contact_id: str | None, email: str | None
    ) -> ContactView | None:
        may_create = contact_id is None
        if contact_id is not None:
            named = await self._row(automation.team_id, contact_id)
            if named is None:
                return None
            if named.audience_id == automation.audience_id:
                return contact_dict(named)
            email = named.email
        if not email:
            return None
        row = await self.session.scalar(
            select(Contact).where(
                Contact.audience_id == automation.audience_id, Contact.email == email.lower()
            )
        )
        if row is None and may_create:
            now = self.context.clock.now()
            row = new_contact_row(
                automation.team_id, automation.audience_id, email.lower(), ContactFields(), {}, now
            )
            self.session.add(row)
            await self.session.flush()
            record_event(
                self.session, self.context.clock, automation.team_id, "contact.created",
                event_data(row), scope_domain=self._scope_domain,
            )  # fmt: skip
        if row is None:
            return None
        self.session.expunge(row)
        self._rows[row.id] = row
        return contact_dict(row)

    async def _registry(self, team_id: str) -> dict[str, ContactProperty]:
        if team_id not in self._registries:
            self._registries[team_id] = await registered_properties(self.session, team_id)
        return self._registries[team_id]

    async def update(
        self, team_id: str, contact_id: str, changes: dict[str, Any]
    ) -> ContactView | None:
        row = await self._row(team_id, contact_id)
        if row is None:
            return None
        try:
            fields = ContactFields.model_validate(
                {name: value for name, value in changes.items() if name != "properties"}
            )
            given = changes.get("properties") or {}
            properties = (
                check_contact_properties(given, await self._registry(team_id)) if given else {}
            )
        except ApiError as refusal:
            raise ValueError(refusal.message) from refusal
        except ValueError as refusal:  # pydantic's, e.g. a name too long
            raise ValueError(str(refusal).splitlines()[0]) from refusal
        with self.session.no_autoflush:  # written in one statement at commit (flush)
            changed = apply_changes(row, fields, properties, self.context.clock.now())
        if changed:
            self._dirty.add(contact_id)
            self._event(team_id, "contact.updated", {**event_data(row), "changes": changed})
        return contact_dict(row)

    async def delete(self, team_id: str, contact_id: str) -> bool:
        row = await self._row(team_id, contact_id)
        if row is None:
            return False
        data = event_data(row)
        await self.flush()
        await self.session.execute(delete(Contact).where(Contact.id == contact_id))
        self._rows[contact_id] = None
        self._dirty.discard(contact_id)
        self._members = {pair for pair in self._members if pair[1] != contact_id}
        self._event(team_id, "contact.deleted", data)
        return True

    async def add_to_segment(self, team_id: str, segment_id: str, contact_id: str) -> bool:
        if segment_id not in self._segments:
            self._segments[segment_id] = await self.session.scalar(
                select(Segment.team_id).where(Segment.id == segment_id)
            )
        if self._segments[segment_id] != team_id:
            return False
        self._members.add((segment_id, contact_id))
        return True

    def _event(self, team_id: str, type: str, data: dict[str, Any]) -> None:
        self._activity.append(
            {"id": new_id(), "team_id": team_id, "type": type, "data": data,
             "created_at": self.context.clock.now()}
        )  # fmt: skip

    @property
    def has_activity(self) -> bool:
        """Whether activity events wait to be written."""
        return bool(self._activity)

    async def flush(self) -> None:
        """Write the buffered contact changes, memberships and events (one statement each)."""
        session = self.session
        await bulk.insert_rows(session, table_of(ActivityEvent), self._activity)
        self._activity = []
        rows = [self._rows[contact_id] for contact_id in self._dirty]
        await bulk.update_rows(
            session, table_of(Contact),
            [
                {"id": row.id, **{name: getattr(row, name) for name in _CONTACT_COLUMNS}}
                for row in rows
                if row is not None
            ],
            _CONTACT_COLUMNS,
        )  # fmt: skip
        self._dirty.clear()
        now = self.context.clock.now()
        await bulk.insert_rows(
            session, table_of(SegmentMember),
            [
                {"segment_id": segment_id, "contact_id": contact_id, "created_at": now}
                for segment_id, contact_id in sorted(self._members)
            ],
            ignore_conflicts=True,
        )  # fmt: skip
        self._members.clear()
        await self.session.flush()
