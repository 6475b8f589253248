"""What checking an automation graph looks up, loaded from the database beforehand.

:func:`mailbridge.engine.validation.build` is synchronous and asks its
:class:`~mailbridge.engine.ports.References` about the templates and segments the
steps name; :func:`load_references` reads exactly those, for one team, before the
build runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.engine.ports import TemplateContent
from mailbridge.errors import NotFound, ValidationError
from mailbridge.services.templates import PublishedTemplate, published_template
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Segment


@dataclass
class SQLReferences:
    domain: str | None
    templates: dict[str, TemplateContent] = field(default_factory=dict)
    segments: set[str] = field(default_factory=set)

    def template(self, template_id: str) -> TemplateContent | None:
        return self.templates.get(template_id)

    def segment_exists(self, segment_id: str) -> bool:
        return segment_id in self.segments


def step_config(step: object) -> dict[str, Any]:
    config = step.get("config") if isinstance(step, dict) else None
    return config if isinstance(config, dict) else {}


def named_templates(steps: object) -> set[str]:
    """The template ids or aliases the send steps of raw public ``steps`` name."""
    names: set[str] = set()
    for step in steps if isinstance(steps, list) else ():
        if isinstance(step, dict) and step.get("type") == "send_email":
            template = step_config(step).get("template")
            if isinstance(template, dict) and isinstance(template.get("id"), str):
                names.add(template["id"])
    return names


def named_segments(steps: object) -> set[str]:
    names: set[str] = set()
    for step in steps if isinstance(steps, list) else ():
        if isinstance(step, dict) and step.get("type") == "add_to_segment":
            segment_id = step_config(step).get("segment_id")
            if isinstance(segment_id, str):
                names.add(segment_id)
    return names


def template_content(published: PublishedTemplate) -> TemplateContent:
    reply_to: str | list[str] | None = None
    if published.reply_to:
        reply_to = (
            published.reply_to[0] if len(published.reply_to) == 1 else list(published.reply_to)
        )
    return TemplateContent(
        id=published.template_id,
        from_address=published.from_address,
        subject=published.subject,
        html=published.html,
        text=published.text,
        reply_to=reply_to,
    )


async def _published(
    session: AsyncSession, team_id: str, names: Iterable[str]
) -> dict[str, TemplateContent]:
    found: dict[str, TemplateContent] = {}
    for name in sorted(names):
        try:
            found[name] = template_content(await published_template(session, team_id, name))
        except (NotFound, ValidationError):
            continue  # unknown or never published: the step's check names it
    return found


async def _existing_segments(session: AsyncSession, team_id: str, names: set[str]) -> set[str]:
    ids = [name for name in names if is_uuid(name)]
    if not ids:
        return set()
    rows = await session.scalars(
        select(Segment.id).where(Segment.team_id == team_id, Segment.id.in_(ids))
    )
    return set(rows.all())


async def load_references(
    session: AsyncSession, team_id: str, domain: str | None, steps: object
) -> SQLReferences:
    """The references raw public ``steps`` need, for the automation sending from ``domain``."""
    return SQLReferences(
        domain=domain,
        templates=await _published(session, team_id, named_templates(steps)),
        segments=await _existing_segments(session, team_id, named_segments(steps)),
    )
