"""Topics, and a contact's subscriptions to them (``/contacts/:id_or_email/topics``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pydantic
from fastapi import APIRouter, Body, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.api.openapi import json_body
from mailbridge.services import audiences
from mailbridge.services.audiences import TopicChoice, subscription_view, topic_view
from mailbridge.storage.tables import Contact
from mailbridge.wire import NonBlank

router = APIRouter(tags=["topics"])


class CreateTopic(BaseModel):
    name: NonBlank = Field(min_length=1, max_length=audiences.MAX_TOPIC_NAME_LENGTH)
    default_subscription: Literal["opt_in", "opt_out"]
    description: str | None = Field(default=None, max_length=audiences.MAX_TOPIC_DESCRIPTION_LENGTH)
    visibility: Literal["public", "private"] = "public"


class TopicChoices(BaseModel):
    topics: list[TopicChoice]


@router.post("/topics", status_code=201)
async def create_topic(
    body: CreateTopic, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    topic = await audiences.create_topic(
        session, context.clock, principal.team_id, body.name, body.default_subscription,
        body.description, body.visibility,
    )  # fmt: skip
    return {"object": "topic", "id": topic.id}


@router.get("/topics")
async def list_topics(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    return list_body(await audiences.list_topics(session, principal.team_id, page), topic_view)


@router.get("/topics/{topic_id}")
async def get_topic(topic_id: str, principal: Reader, session: SessionDep) -> dict[str, Any]:
    return topic_view(await audiences.get_topic(session, principal.team_id, topic_id))


@router.patch("/topics/{topic_id}")
async def update_topic(
    topic_id: str,
    body: Annotated[dict[str, Any], Body()],
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    topic = await audiences.update_topic(session, context.clock, principal.team_id, topic_id, body)
    return {"object": "topic", "id": topic.id}


@router.delete("/topics/{topic_id}")
async def delete_topic(topic_id: str, principal: Writer, session: SessionDep) -> dict[str, Any]:
    topic = await audiences.delete_topic(session, principal.team_id, topic_id)
    return {"object": "topic", "id": topic.id, "deleted": True}


async def _contact(
    session: AsyncSession, team_id: str, id_or_email: str, audience_id: str | None
) -> Contact:
    if audience_id is not None:
        await audiences.get_audience(session, team_id, audience_id)
    return await audiences.find_contact(session, team_id, id_or_email, audience_id)


@router.get("/contacts/{id_or_email}/topics")
async def contact_topics(
    id_or_email: str, principal: Reader, session: SessionDep, page: PageDep,
    audience_id: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:  # fmt: skip
    contact = await _contact(session, principal.team_id, id_or_email, audience_id)
    result = await audiences.contact_subscriptions(session, principal.team_id, contact.id, page)
    return list_body(result, subscription_view)


@router.patch(
    "/contacts/{id_or_email}/topics", openapi_extra=json_body(TopicChoices, list[TopicChoice])
)
async def update_contact_topics(
    id_or_email: str, body: Annotated[Any, Body()], principal: Writer, session: SessionDep,
    context: ContextDep, audience_id: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:  # fmt: skip
    """A bare array ``[{id, subscription}]`` (what the Resend SDK sends) or ``{topics: [...]}``."""
    try:
        choices = TopicChoices.model_validate({"topics": body} if isinstance(body, list) else body)
    except pydantic.ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]
        ) from None
    contact = await _contact(session, principal.team_id, id_or_email, audience_id)
    await audiences.set_choices(
        session, context.clock, principal.team_id, contact.id,
        [(choice.id, choice.subscription) for choice in choices.topics],
    )  # fmt: skip
    return {"object": "contact", "id": contact.id}
