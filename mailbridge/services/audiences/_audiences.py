"""Audiences: named lists of contacts.

Every team also has a default audience, "General", made on first need: the
contacts written under ``/contacts`` without an ``audience_id`` live there. Its id is
derived from the team's id, so two requests that both find it missing collide on
the primary key instead of making two defaults.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.services.audiences._contact_lock import holding_contact_lock, time_bound
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned
from mailbridge.storage.tables import Audience

DEFAULT_AUDIENCE_NAME = "General"
MAX_AUDIENCE_NAME_LENGTH = 200
# Fixed forever: changing it would give every team a second default audience.
_DEFAULT_AUDIENCE_NAMESPACE = uuid.UUID("6d1f3c52-0c4e-4f7e-9a43-2b9b1f6f0a11")


def default_audience_id(team_id: str) -> str:
    """The id the team's default audience has (or will have once it is needed)."""
    return str(uuid.uuid5(_DEFAULT_AUDIENCE_NAMESPACE, team_id))


def audience_view(audience: Audience) -> dict[str, Any]:
    return {
        "object": "audience",
        "id": audience.id,
        "name": audience.name,
        "created_at": isoformat_ms(audience.created_at),
    }


def _name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_AUDIENCE_NAME_LENGTH:
        raise ValidationError(f"`name` must be 1 to {MAX_AUDIENCE_NAME_LENGTH} characters.")
    return name


async def create_audience(session: AsyncSession, clock: Clock, team_id: str, name: str) -> Audience:
    audience = Audience(team_id=team_id, name=_name(name), is_default=False, created_at=clock.now())
    session.add(audience)
    await session.commit()
    return audience


async def list_audiences(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Audience]:
    return await paginate(
        session, select(Audience).where(Audience.team_id == team_id), Audience, page
    )


async def get_audience(session: AsyncSession, team_id: str, audience_id: str) -> Audience:
    return await get_owned(session, Audience, team_id, audience_id, "Audience")


async def find_default_audience(session: AsyncSession, team_id: str) -> Audience | None:
    found: Audience | None = await session.scalar(
        select(Audience).where(
            Audience.id == default_audience_id(team_id), Audience.team_id == team_id
        )
    )
    return found


async def default_audience(session: AsyncSession, clock: Clock, team_id: str) -> Audience:
    """The team's default audience, created (and committed) if it does not exist yet.

    Call it before adding anything to ``session``: a lost creation race rolls back.
    """
    found = await find_default_audience(session, team_id)
    if found is not None:
        return found
    audience = Audience(
        id=default_audience_id(team_id),
        team_id=team_id,
        name=DEFAULT_AUDIENCE_NAME,
        is_default=True,
        created_at=clock.now(),
    )
    session.add(audience)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        found = await find_default_audience(session, team_id)
        if found is None:
            raise
        return found
    return audience


async def resolve_audience(
    session: AsyncSession, clock: Clock, team_id: str, audience_id: str | None
) -> Audience:
    """The audience a ``/contacts`` write names, else the default one."""
    if audience_id is None:
        return await default_audience(session, clock, team_id)
    return await get_audience(session, team_id, audience_id)


async def delete_audience(
    session: AsyncSession, context: ServiceContext, team_id: str, audience_id: str
) -> Audience:
    """Delete an audience with its contacts and segments (a bulk contact write).

    The default audience may be deleted too; it comes back, empty, on next need.
    """
    audience = await get_audience(session, team_id, audience_id)
    async with holding_contact_lock(session, context, team_id):
        async with time_bound(session, context.settings.contacts_write_timeout):
            # The database cascades to contacts, their topics, segments and members.
            await session.execute(delete(Audience).where(Audience.id == audience.id))
        await session.commit()
    return audience
