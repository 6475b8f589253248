"""Contacts, under an audience and under ``/contacts`` (the default audience unless named).

``/contacts/:id_or_email`` finds an id in any audience of the team and an email in
``audience_id`` (query, or body on PATCH) or else the default audience.
``/audiences/:id/contacts`` also takes a segment's id, as Resend's SDKs send one there:
the segment's audience, narrowed to the segment (``audiences.audience_scope``).
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from fastapi import APIRouter, Body, Depends, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.api.bodies import list_body, unpaged_list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.api.openapi import json_body
from mailbridge.services import audiences
from mailbridge.services.audiences import (
    AudienceScope,
    ContactChanges,
    ContactFilters,
    NewContact,
    TopicChoice,
    contact_view,
    outcome_view,
    registered_properties,
)
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.pagination import Page
from mailbridge.storage.tables import Contact

router = APIRouter(tags=["contacts"])


class SegmentRef(BaseModel):
    id: str


class CreateContact(NewContact):
    audience_id: str | None = None
    topics: list[TopicChoice] | None = None
    segments: list[SegmentRef] | None = None


class UpdateContact(ContactChanges):
    audience_id: str | None = None


class ContactBatch(BaseModel):
    audience_id: str | None = None
    contacts: list[NewContact] = Field(min_length=1, max_length=audiences.MAX_CONTACT_BATCH_SIZE)


# The batch's other form: the bare array of contacts.
ContactList = Annotated[
    list[NewContact], Field(min_length=1, max_length=audiences.MAX_CONTACT_BATCH_SIZE)
]


def contact_filters(
    # Named apart from the path's `audience_id` of the audience-scoped list.
    audience: Annotated[str | None, Query(alias="audience_id")] = None,
    email: Annotated[str | None, Query()] = None,
    email_contains: Annotated[str | None, Query()] = None,
    unsubscribed: Annotated[str | None, Query()] = None,
    created_after: Annotated[str | None, Query()] = None,
    created_before: Annotated[str | None, Query()] = None,
) -> ContactFilters:
    return ContactFilters.parse(
        audience_id=audience,
        email=email,
        email_contains=email_contains,
        unsubscribed=unsubscribed,
        created_after=created_after,
        created_before=created_before,
    )


FiltersDep = Annotated[ContactFilters, Depends(contact_filters)]
AudienceQuery = Annotated[str | None, Query()]


def created(contact: Contact) -> dict[str, Any]:
    return {"object": "contact", "id": contact.id}


def removed(contact: Contact) -> dict[str, Any]:
    # Resend answers the id as `contact`; its SDK reads both.
    return {"object": "contact", "id": contact.id, "contact": contact.id, "deleted": True}


async def _create(
    session: AsyncSession, context: ServiceContext, team_id: str, scope: AudienceScope,
    body: CreateContact,
) -> dict[str, Any]:  # fmt: skip
    contact = await audiences.create_contact(
        session, context.clock, team_id, scope.audience, body,
        topic_choices=body.topics or (),
        segment_ids=[*scope.segment_ids, *(segment.id for segment in body.segments or ())],
        time_limit=context.settings.contacts_write_timeout,
    )  # fmt: skip
    return created(contact)


async def _update(
    session: AsyncSession, context: ServiceContext, team_id: str, contact: Contact,
    body: UpdateContact,
) -> dict[str, Any]:  # fmt: skip
    await audiences.update_contact(
        session, context.clock, team_id, contact, body,
        time_limit=context.settings.contacts_write_timeout,
    )  # fmt: skip
    return {"object": "contact", "id": contact.id}


async def _delete(
    session: AsyncSession, context: ServiceContext, team_id: str, contact: Contact
) -> dict[str, Any]:
    await audiences.delete_contact(
        session, context.clock, team_id, contact,
        time_limit=context.settings.contacts_write_timeout,
    )  # fmt: skip
    return removed(contact)


async def _in_audience(
    session: AsyncSession, team_id: str, audience_id: str, id_or_email: str
) -> Contact:
    scope = await audiences.audience_scope(session, team_id, audience_id)
    return await audiences.find_contact(session, team_id, id_or_email, scope.audience.id)


async def _named(
    session: AsyncSession, team_id: str, id_or_email: str, audience_id: str | None
) -> Contact:
    if audience_id is not None:
        return await _in_audience(session, team_id, audience_id, id_or_email)
    return await audiences.find_contact(session, team_id, id_or_email)


async def _contact_shown(session: AsyncSession, team_id: str, contact: Contact) -> dict[str, Any]:
    return contact_view(contact, await registered_properties(session, team_id))


async def _contacts_page(
    session: AsyncSession, team_id: str, page: Page[Contact]
) -> dict[str, Any]:
    registry = await registered_properties(session, team_id)
    return list_body(page, lambda contact: contact_view(contact, registry))


# --- under an audience -----------------------------------------------------------


@router.post("/audiences/{audience_id}/contacts", status_code=201)
async def create_audience_contact(
    audience_id: str, body: CreateContact, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    scope = await audiences.audience_scope(session, principal.team_id, audience_id)
    return await _create(session, context, principal.team_id, scope, body)


@router.get("/audiences/{audience_id}/contacts")
async def list_audience_contacts(
    audience_id: str, principal: Reader, session: SessionDep, page: PageDep, filters: FiltersDep
) -> dict[str, Any]:
    result = await audiences.list_audience_contacts(
        session, principal.team_id, audience_id, filters, page
    )
    return await _contacts_page(session, principal.team_id, result)


@router.get("/audiences/{audience_id}/contacts/{id_or_email}")
async def get_audience_contact(
    audience_id: str, id_or_email: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    contact = await _in_audience(session, principal.team_id, audience_id, id_or_email)
    return await _contact_shown(session, principal.team_id, contact)


@router.patch("/audiences/{audience_id}/contacts/{id_or_email}")
async def update_audience_contact(
    audience_id: str, id_or_email: str, body: UpdateContact, principal: Writer,
    session: SessionDep, context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    contact = await _in_audience(session, principal.team_id, audience_id, id_or_email)
    return await _update(session, context, principal.team_id, contact, body)


@router.delete("/audiences/{audience_id}/contacts/{id_or_email}")
async def delete_audience_contact(
    audience_id: str, id_or_email: str, principal: Writer, session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:  # fmt: skip
    contact = await _in_audience(session, principal.team_id, audience_id, id_or_email)
    return await _delete(session, context, principal.team_id, contact)


# --- under /contacts ---------------------------------------------------------------


@router.post("/contacts", status_code=201)
async def create_contact(
    body: CreateContact, principal: Writer, session: SessionDep, context: ContextDep,
    audience_id: AudienceQuery = None,
) -> dict[str, Any]:  # fmt: skip
    chosen = body.audience_id or audience_id
    audience = await audiences.resolve_audience(session, context.clock, principal.team_id, chosen)
    return await _create(session, context, principal.team_id, AudienceScope(audience), body)


@router.get("/contacts")
async def list_contacts(
    principal: Reader, session: SessionDep, page: PageDep, filters: FiltersDep
) -> dict[str, Any]:
    result = await audiences.list_contacts(session, principal.team_id, filters, page)
    return await _contacts_page(session, principal.team_id, result)


@router.post("/contacts/batch", openapi_extra=json_body(ContactBatch, ContactList))
async def batch_contacts(
    body: Annotated[Any, Body()], principal: Writer, session: SessionDep, context: ContextDep,
    audience_id: AudienceQuery = None,
) -> dict[str, Any]:  # fmt: skip
    """A bare array of contacts, or ``{audience_id?, contacts: [...]}``."""
    try:
        batch = ContactBatch.model_validate({"contacts": body} if isinstance(body, list) else body)
    except pydantic.ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]
        ) from None
    audience = await audiences.resolve_audience(
        session, context.clock, principal.team_id, batch.audience_id or audience_id
    )
    outcomes = await audiences.upsert_contacts(
        session, context, principal.team_id, audience, batch.contacts
    )
    return unpaged_list_body(outcome_view(outcome) for outcome in outcomes)


@router.get("/contacts/{id_or_email}")
async def get_contact(
    id_or_email: str, principal: Reader, session: SessionDep, audience_id: AudienceQuery = None
) -> dict[str, Any]:
    contact = await _named(session, principal.team_id, id_or_email, audience_id)
    return await _contact_shown(session, principal.team_id, contact)


@router.patch("/contacts/{id_or_email}")
async def update_contact(
    id_or_email: str, body: UpdateContact, principal: Writer, session: SessionDep,
    context: ContextDep, audience_id: AudienceQuery = None,
) -> dict[str, Any]:  # fmt: skip
    chosen = body.audience_id or audience_id
    contact = await _named(session, principal.team_id, id_or_email, chosen)
    return await _update(session, context, principal.team_id, contact, body)


@router.delete("/contacts/{id_or_email}")
async def delete_contact(
    id_or_email: str, principal: Writer, session: SessionDep, context: ContextDep,
    audience_id: AudienceQuery = None,
) -> dict[str, Any]:  # fmt: skip
    contact = await _named(session, principal.team_id, id_or_email, audience_id)
    return await _delete(session, context, principal.team_id, contact)
