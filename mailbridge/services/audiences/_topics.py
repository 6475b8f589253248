"""Topics: what a team writes about, and each contact's choice for each of them.

A topic's ``default_subscription`` (``opt_in`` or ``opt_out``) is what a contact
without a choice of their own gets; it is fixed at creation, since changing it would
silently flip every such contact. A contact's own choice is a ``contact_topics``
row. The contact's ``unsubscribed`` flag is separate and, at send time, overrides
every topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import get_owned
from mailbridge.storage.tables import ContactTopic, Topic

SUBSCRIPTIONS = ("opt_in", "opt_out")
VISIBILITIES = ("public", "private")
MAX_TOPIC_NAME_LENGTH = 200
MAX_TOPIC_DESCRIPTION_LENGTH = 1000


def topic_view(topic: Topic) -> dict[str, Any]:
    return {
        "object": "topic",
        "id": topic.id,
        "name": topic.name,
        "description": topic.description,
        "default_subscription": topic.default_subscription,
        "visibility": topic.visibility,
        "created_at": isoformat_ms(topic.created_at),
        "updated_at": isoformat_ms(topic.updated_at),
    }


def _name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_TOPIC_NAME_LENGTH:
        raise ValidationError(f"`name` must be 1 to {MAX_TOPIC_NAME_LENGTH} characters.")
    return name


def _description(description: str | None) -> str | None:
    if description is not None and len(description) > MAX_TOPIC_DESCRIPTION_LENGTH:
        raise ValidationError(
            f"`description` must be at most {MAX_TOPIC_DESCRIPTION_LENGTH} characters."
        )
    return description


def _one_of(value: str, allowed: Sequence[str], field: str) -> str:
    if value not in allowed:
        raise ValidationError(f"`{field}` must be one of {', '.join(allowed)}.")
    return value


async def create_topic(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    name: str,
    default_subscription: str,
    description: str | None = None,
    visibility: str = "public",
) -> Topic:
    now = clock.now()
    topic = Topic(
        team_id=team_id,
        name=_name(name),
        description=_description(description),
        default_subscription=_one_of(default_subscription, SUBSCRIPTIONS, "default_subscription"),
        visibility=_one_of(visibility, VISIBILITIES, "visibility"),
        created_at=now,
        updated_at=now,
    )
    session.add(topic)
    await session.commit()
    return topic


async def list_topics(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Topic]:
    return await paginate(session, select(Topic).where(Topic.team_id == team_id), Topic, page)


async def get_topic(session: AsyncSession, team_id: str, topic_id: str) -> Topic:
    return await get_owned(session, Topic, team_id, topic_id, "Topic")


async def update_topic(
    session: AsyncSession, clock: Clock, team_id: str, topic_id: str, changes: Mapping[str, Any]
) -> Topic:
    """Change name, description or visibility; ``default_subscription`` may only be repeated."""
    topic = await get_topic(session, team_id, topic_id)
    fixed = changes.get("default_subscription")
    if fixed is not None and fixed != topic.default_subscription:
        raise ValidationError("`default_subscription` cannot be changed once the topic exists.")
    if changes.get("name") is not None:
        topic.name = _name(changes["name"])
    if "description" in changes:
        topic.description = _description(changes["description"])
    if changes.get("visibility") is not None:
        topic.visibility = _one_of(changes["visibility"], VISIBILITIES, "visibility")
    topic.updated_at = clock.now()
    await session.commit()
    return topic


async def delete_topic(session: AsyncSession, team_id: str, topic_id: str) -> Topic:
    """Delete a topic; the contacts' choices for it go with it (database cascade)."""
    topic = await get_topic(session, team_id, topic_id)
    await session.delete(topic)
    await session.commit()
    return topic


async def checked_choices(
    session: AsyncSession, team_id: str, choices: Sequence[tuple[str, str]]
) -> dict[str, str]:
    """``[(topic_id, subscription)]`` checked: the team's topics, each named once."""
    wanted: dict[str, str] = {}
    for topic_id, subscription in choices:
        if topic_id in wanted:
            raise ValidationError(f"Topic {topic_id} is named more than once.")
        wanted[topic_id] = _one_of(subscription, SUBSCRIPTIONS, "subscription")
    if not wanted:
        return wanted
    owned = set(
        await session.scalars(
            select(Topic.id).where(Topic.team_id == team_id, Topic.id.in_(list(wanted)))
        )
    )
    for topic_id in wanted:
        if topic_id not in owned:
            raise NotFound(f"Topic {topic_id} not found.")
    return wanted


def add_choices(
    session: AsyncSession, contact_id: str, choices: Mapping[str, str], now: datetime
) -> None:
    """A new contact's choices (nothing to replace yet)."""
    session.add_all(
        ContactTopic(contact_id=contact_id, topic_id=topic_id, subscription=choice, updated_at=now)
        for topic_id, choice in choices.items()
    )


async def set_choices(
    session: AsyncSession, clock: Clock, team_id: str, contact_id: str,
    choices: Sequence[tuple[str, str]],
) -> None:  # fmt: skip
    """Record a contact's choices (the other topics keep theirs) and commit."""
    wanted = await checked_choices(session, team_id, choices)
    now = clock.now()
    existing = {
        row.topic_id: row
        for row in await session.scalars(
            select(ContactTopic).where(
                ContactTopic.contact_id == contact_id, ContactTopic.topic_id.in_(list(wanted))
            )
        )
    }
    for topic_id, subscription in wanted.items():
        row = existing.get(topic_id)
        if row is None:
            add_choices(session, contact_id, {topic_id: subscription}, now)
        elif row.subscription != subscription:
            row.subscription, row.updated_at = subscription, now
    await session.commit()


@dataclass(frozen=True)
class TopicSubscription:
    """A topic as one contact sees it: their own choice, else the topic's default."""

    topic: Topic
    subscription: str
    chosen: bool


def subscription_view(item: TopicSubscription) -> dict[str, Any]:
    return {
        "id": item.topic.id,
        "name": item.topic.name,
        "description": item.topic.description,
        "subscription": item.subscription,
    }


async def contact_subscriptions(
    session: AsyncSession, team_id: str, contact_id: str, page: PageRequest
) -> Page[TopicSubscription]:
    """One page of the team's topics, each with the contact's effective subscription."""
    topics_page = await list_topics(session, team_id, page)
    chosen = await _choices_of(session, contact_id, (topic.id for topic in topics_page.items))
    items = [
        TopicSubscription(
            topic, chosen.get(topic.id, topic.default_subscription), topic.id in chosen
        )
        for topic in topics_page.items
    ]
    return Page(items=items, has_more=topics_page.has_more)


async def _choices_of(
    session: AsyncSession, contact_id: str, topic_ids: Iterable[str]
) -> dict[str, str]:
    ids = list(topic_ids)
    if not ids:
        return {}
    rows = await session.execute(
        select(ContactTopic.topic_id, ContactTopic.subscription).where(
            ContactTopic.contact_id == contact_id, ContactTopic.topic_id.in_(ids)
        )
    )
    return {topic_id: subscription for topic_id, subscription in rows.tuples()}
