"""Templates: stored email content with variables, edited as drafts and published.

A template has at most two live versions: a *draft* (what edits change) and a
*published* one (what sending uses). Published content never changes: editing a
published template starts a new draft copied from it, and publishing that draft
makes it the new published version. A template is named by its id or its alias;
aliases cannot look like UUIDs, so the two never collide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound, ValidationError
from mailbridge.mail.templating import Variable
from mailbridge.services.kernel import record_event
from mailbridge.services.polls import check_embedded_polls
from mailbridge.services.templates._content import (
    MAX_TEMPLATE_NAME_LENGTH,
    TemplateContent,
    check_alias,
    check_content,
    normalize_reply_to,
)
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Template, TemplateVersion

COPY_SUFFIX = " (copy)"


class TemplateChanges(TypedDict, total=False):
    """A partial update: a key present replaces the field, None clears an optional one."""

    name: str
    alias: str | None
    html: str
    from_address: str | None
    subject: str | None
    reply_to: str | Sequence[str] | None
    text: str | None
    variables: Sequence[Variable]


@dataclass(frozen=True)
class TemplateState:
    """A template with its current version (the draft if any, else the published one)."""

    template: Template
    current: TemplateVersion

    @property
    def status(self) -> str:
        return "draft" if self.template.draft_version_id is not None else "published"


@dataclass(frozen=True)
class PublishedTemplate:
    """The published content of a template: what an email or automation step sends."""

    template_id: str
    version_id: str
    alias: str | None
    name: str
    from_address: str | None
    subject: str | None
    reply_to: tuple[str, ...] | None
    html: str
    text: str | None
    variables: tuple[Variable, ...]


# -- validation ---------------------------------------------------------------------------


async def _check_polls(session: AsyncSession, team_id: str, content: TemplateContent) -> None:
    """Every ``{{{poll:ID}}}`` names one of the team's polls (what is accepted is sendable)."""
    await check_embedded_polls(
        session, team_id, content.html, content.text, subjects=[content.subject]
    )


# -- reading ------------------------------------------------------------------------------


async def _find(
    session: AsyncSession, team_id: str, id_or_alias: str, *, for_update: bool = False
) -> Template:
    query = select(Template).where(Template.team_id == team_id)
    if is_uuid(id_or_alias):
        query = query.where(Template.id == id_or_alias)
    else:
        query = query.where(Template.alias == id_or_alias)
    if for_update:
        # Serializes concurrent edits of one template (version numbers, draft pointer).
        query = query.with_for_update()
    template = await session.scalar(query)
    if template is None:
        raise NotFound("Template not found.")
    return template


def _current_version_id(template: Template) -> str:
    version_id = template.draft_version_id or template.published_version_id
    assert version_id is not None, "a template always has a draft or a published version"
    return version_id


async def _version(session: AsyncSession, version_id: str) -> TemplateVersion:
    version = await session.get(TemplateVersion, version_id)
    assert version is not None, f"template version {version_id} vanished"
    return version


async def get_template(session: AsyncSession, team_id: str, id_or_alias: str) -> TemplateState:
    template = await _find(session, team_id, id_or_alias)
    return TemplateState(template, await _version(session, _current_version_id(template)))


async def list_templates(
    session: AsyncSession, team_id: str, page: PageRequest
) -> Page[TemplateState]:
    query = select(Template).where(Template.team_id == team_id)
    found = await paginate(session, query, Template, page)
    wanted = [_current_version_id(template) for template in found.items]
    versions = {
        version.id: version
        for version in await session.scalars(
            select(TemplateVersion).where(TemplateVersion.id.in_(wanted))
        )
    }
    states = [TemplateState(t, versions[_current_version_id(t)]) for t in found.items]
    return Page(items=states, has_more=found.has_more)


async def published_template(
    session: AsyncSession, team_id: str, id_or_alias: str
) -> PublishedTemplate:
    """The published content of a template, for sending; 422 if it was never published."""
    template = await _find(session, team_id, id_or_alias)
    if template.published_version_id is None:
        raise ValidationError(f"Template `{id_or_alias}` is not published; publish it first.")
    version = await _version(session, template.published_version_id)
    content = _content_of(version)
    return PublishedTemplate(
        template_id=template.id,
        version_id=version.id,
        alias=template.alias,
        name=content.name,
        from_address=content.from_address,
        subject=content.subject,
        reply_to=content.reply_to,
        html=content.html,
        text=content.text,
        variables=content.variables,
    )


# -- writing ------------------------------------------------------------------------------


def _content_of(version: TemplateVersion) -> TemplateContent:
    stored = version.reply_to
    reply_to = (stored,) if isinstance(stored, str) else tuple(stored) if stored else None
    return TemplateContent(
        name=version.name,
        html=version.html or "",
        from_address=version.from_address,
        subject=version.subject,
        reply_to=reply_to,
        text=version.text,
        variables=tuple(Variable.from_json(item) for item in version.variables or ()),
    )


def _new_version(
    template_id: str, number: int, content: TemplateContent, clock: Clock
) -> TemplateVersion:
    version = TemplateVersion(template_id=template_id, number=number, created_at=clock.now())
    _fill(version, content)
    return version


def _fill(version: TemplateVersion, content: TemplateContent) -> None:
    version.name = content.name
    version.html = content.html
    version.from_address = content.from_address
    version.subject = content.subject
    version.reply_to = list(content.reply_to) if content.reply_to is not None else None
    version.text = content.text
    version.variables = [variable.to_json() for variable in content.variables]


async def _ensure_alias_free(
    session: AsyncSession, team_id: str, alias: str | None, template_id: str | None
) -> None:
    if alias is None:
        return
    owner = await session.scalar(
        select(Template.id).where(Template.team_id == team_id, Template.alias == alias)
    )
    if owner is not None and owner != template_id:
        raise _alias_taken(alias)


def _alias_taken(alias: str) -> ValidationError:
    return ValidationError(f"The alias `{alias}` is already used by another template.")


async def _commit(session: AsyncSession, alias: str | None) -> None:
    """Commit; losing a race for an alias reads like the check that came before it."""
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        if alias is not None:
            raise _alias_taken(alias) from None
        raise


async def create_template(
    session: AsyncSession,
    clock: Clock,
    team_id: str,
    content: TemplateContent,
    alias: str | None = None,
) -> TemplateState:
    """A new template whose first version is a draft."""
    content = check_content(content)
    await _check_polls(session, team_id, content)
    alias = check_alias(alias)
    await _ensure_alias_free(session, team_id, alias, None)
    now = clock.now()
    template = Template(team_id=team_id, alias=alias, created_at=now, updated_at=now)
    session.add(template)
    await session.flush()
    version = _new_version(template.id, 1, content, clock)
    session.add(version)
    await session.flush()
    template.draft_version_id = version.id
    record_event(session, clock, team_id, "template.created", {"id": template.id})
    await _commit(session, alias)
    return TemplateState(template, version)


async def update_template(
    session: AsyncSession, clock: Clock, team_id: str, id_or_alias: str, changes: TemplateChanges
) -> TemplateState:
    """Apply ``changes`` to the draft, starting a new draft if only a published version exists."""
    template = await _find(session, team_id, id_or_alias, for_update=True)
    current = await _version(session, _current_version_id(template))
    content = _content_of(current)
    if "name" in changes:
        content = replace(content, name=changes["name"])
    if "html" in changes:
        content = replace(content, html=changes["html"])
    if "from_address" in changes:
        content = replace(content, from_address=changes["from_address"])
    if "subject" in changes:
        content = replace(content, subject=changes["subject"])
    if "reply_to" in changes:
        content = replace(content, reply_to=normalize_reply_to(changes["reply_to"]))
    if "text" in changes:
        content = replace(content, text=changes["text"])
    if "variables" in changes:
        content = replace(content, variables=tuple(changes["variables"]))
    content = check_content(content)
    alias = template.alias
    if "alias" in changes:
        alias = check_alias(changes["alias"])
        await _ensure_alias_free(session, team_id, alias, template.id)
        template.alias = alias
    # An alias-only (or no-op) change leaves the versions alone.
    if content != _content_of(current):
        await _check_polls(session, team_id, content)
        if template.draft_version_id is None:
            # Published content is immutable: the edit becomes the next version, a draft.
            draft = _new_version(template.id, current.number + 1, content, clock)
            session.add(draft)
            await session.flush()
            template.draft_version_id = draft.id
            current = draft
        else:
            _fill(current, content)
    template.updated_at = clock.now()
    record_event(session, clock, team_id, "template.updated", {"id": template.id})
    await _commit(session, alias if "alias" in changes else None)
    return TemplateState(template, current)


async def publish_template(
    session: AsyncSession, clock: Clock, team_id: str, id_or_alias: str
) -> TemplateState:
    """Make the draft the published version; publishing with no draft changes nothing."""
    template = await _find(session, team_id, id_or_alias, for_update=True)
    if template.draft_version_id is None:
        return TemplateState(template, await _version(session, _current_version_id(template)))
    draft = await _version(session, template.draft_version_id)
    now = clock.now()
    draft.published_at = now
    template.published_version_id = draft.id
    template.draft_version_id = None
    template.published_at = now
    template.updated_at = now
    record_event(
        session,
        clock,
        team_id,
        "template.published",
        {"id": template.id, "version_id": draft.id, "version": draft.number},
    )
    await session.commit()
    return TemplateState(template, draft)


async def duplicate_template(
    session: AsyncSession, clock: Clock, team_id: str, id_or_alias: str
) -> TemplateState:
    """A new draft template with the current content, named "<name> (copy)", without alias."""
    source = await get_template(session, team_id, id_or_alias)
    content = _content_of(source.current)
    name = content.name[: MAX_TEMPLATE_NAME_LENGTH - len(COPY_SUFFIX)] + COPY_SUFFIX
    return await create_template(session, clock, team_id, replace(content, name=name))


async def delete_template(
    session: AsyncSession, clock: Clock, team_id: str, id_or_alias: str
) -> str:
    """Delete a template and every version of it; answers the deleted id."""
    template = await _find(session, team_id, id_or_alias, for_update=True)
    template_id = template.id
    await session.execute(delete(TemplateVersion).where(TemplateVersion.template_id == template_id))
    await session.delete(template)
    record_event(session, clock, team_id, "template.deleted", {"id": template_id})
    await session.commit()
    return template_id


# -- views --------------------------------------------------------------------------------


def template_view(state: TemplateState) -> dict[str, Any]:
    """The full template, as GET /templates/:id answers it (Resend's shape)."""
    template, version = state.template, state.current
    content = _content_of(version)
    return {
        "object": "template",
        "id": template.id,
        "current_version_id": version.id,
        "alias": template.alias,
        "name": content.name,
        "status": state.status,
        "published_at": isoformat_ms(template.published_at),
        "created_at": isoformat_ms(template.created_at),
        "updated_at": isoformat_ms(template.updated_at),
        "from": content.from_address,
        "subject": content.subject,
        "reply_to": list(content.reply_to) if content.reply_to is not None else None,
        "html": content.html,
        "text": content.text,
        "variables": [variable.to_json() for variable in content.variables],
        "has_unpublished_versions": template.draft_version_id is not None,
    }


def template_list_item(state: TemplateState) -> dict[str, Any]:
    template = state.template
    return {
        "id": template.id,
        "name": state.current.name,
        "alias": template.alias,
        "status": state.status,
        "published_at": isoformat_ms(template.published_at),
        "created_at": isoformat_ms(template.created_at),
        "updated_at": isoformat_ms(template.updated_at),
    }
