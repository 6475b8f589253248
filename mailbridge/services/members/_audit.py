"""The team's audit log: who changed its members, roles, invitations and sessions, and when.

Written in the same transaction as the change it records, so a change and its record
commit together; read by owners (``GET /members/audit``, the dashboard's Members page).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import RoleTooLow
from mailbridge.services.accounts import Role
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.tables import AuditEvent, Member

OPERATOR = "operator"  # `mailbridge admin …`, run by whoever runs the service


async def actor_of(session: AsyncSession, member_id: str | None) -> tuple[str | None, str]:
    """The member id and address an audit event names for ``member_id`` (None: the operator)."""
    if member_id is None:
        return None, OPERATOR
    email = await session.scalar(select(Member.email).where(Member.id == member_id))
    return member_id, email or member_id


async def record_audit(
    session: AsyncSession, clock: Clock, team_id: str, actor_member_id: str | None,
    action: str, subject: str, **data: Any,
) -> None:  # fmt: skip
    """Add the event to the session (committed with the change it records)."""
    member_id, actor = await actor_of(session, actor_member_id)
    session.add(
        AuditEvent(
            team_id=team_id, actor_member_id=member_id, actor=actor[:320], action=action,
            subject=subject[:320], data=data, created_at=clock.now(),
        )
    )  # fmt: skip


async def list_audit(
    session: AsyncSession, team_id: str, actor: Role | None, page: PageRequest
) -> Page[AuditEvent]:
    if actor is not Role.OWNER:
        raise RoleTooLow("Only owners read the audit log.")
    statement = select(AuditEvent).where(AuditEvent.team_id == team_id)
    return await paginate(session, statement, AuditEvent, page)


def audit_view(event: AuditEvent) -> dict[str, Any]:
    return {
        "object": "audit_event", "id": event.id, "actor": event.actor,
        "actor_member_id": event.actor_member_id, "action": event.action,
        "subject": event.subject, "data": event.data,
        "created_at": isoformat_ms(event.created_at),
    }  # fmt: skip
