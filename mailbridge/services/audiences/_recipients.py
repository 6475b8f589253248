"""Who a marketing send reaches: an audience, optionally narrowed by a segment and a topic.

One SQL condition on ``contacts`` (the campaigns context resolves it once per send, in
chunks): the audience's contacts, those the segment holds (its filter or added by
hand), subscribed to the topic (their own choice, else the topic's default), and never
an unsubscribed contact — the flag overrides every topic.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, exists, not_
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.services.audiences._audiences import get_audience
from mailbridge.services.audiences._segments import get_segment, members_condition
from mailbridge.services.audiences._topics import get_topic
from mailbridge.storage.tables import Contact, ContactTopic


async def check_recipients(
    session: AsyncSession,
    team_id: str,
    audience_id: str | None,
    segment_id: str | None,
    topic_id: str | None,
) -> str:
    """The audience a send reaches (a segment alone names its audience); 404 for ids
    that are not the team's, 422 for a segment of another audience."""
    if segment_id is not None:
        segment = await get_segment(session, team_id, segment_id)
        if audience_id is not None and audience_id != segment.audience_id:
            raise ValidationError("The segment belongs to another audience than `audience_id`.")
        audience_id = segment.audience_id
    if audience_id is None:
        raise ValidationError("A campaign needs an `audience_id` or a `segment_id`.")
    await get_audience(session, team_id, audience_id)
    if topic_id is not None:
        await get_topic(session, team_id, topic_id)
    return audience_id


async def recipients_condition(
    session: AsyncSession,
    team_id: str,
    audience_id: str | None,
    segment_id: str | None,
    topic_id: str | None,
) -> ColumnElement[bool]:
    """The contacts a marketing send reaches (see the module's docstring)."""
    audience_id = await check_recipients(session, team_id, audience_id, segment_id, topic_id)
    conditions: list[ColumnElement[bool]] = [
        Contact.team_id == team_id,
        Contact.audience_id == audience_id,
        not_(Contact.unsubscribed),
    ]
    if segment_id is not None:
        conditions.append(
            await members_condition(session, await get_segment(session, team_id, segment_id))
        )
    if topic_id is not None:
        topic = await get_topic(session, team_id, topic_id)
        choice = ContactTopic.topic_id == topic.id, ContactTopic.contact_id == Contact.id
        if topic.default_subscription == "opt_in":
            conditions.append(not_(exists().where(*choice, ContactTopic.subscription == "opt_out")))
        else:
            conditions.append(exists().where(*choice, ContactTopic.subscription == "opt_in"))
    return and_(*conditions)
