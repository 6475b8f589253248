"""Cursor pagination (spec §8.3), one piece for every list.

Order is newest first with the id as tie-break. ``after`` and ``before`` name an
object of the same list (the cursor itself is excluded); a cursor outside the list —
unknown, deleted, or another team's — is a 422, never a silent empty page.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Integer, Select, and_, or_
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.storage.queries import is_ascii_number

T = TypeVar("T")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
LIMIT_MESSAGE = "`limit` must be a number from 1 to 100."


@dataclass(frozen=True)
class PageRequest:
    limit: int = DEFAULT_LIMIT
    after: str | None = None
    before: str | None = None

    @classmethod
    def parse(
        cls, limit: str | None = None, after: str | None = None, before: str | None = None
    ) -> PageRequest:
        if after is not None and before is not None:
            raise ValidationError("`after` and `before` cannot be used together.")
        value = DEFAULT_LIMIT
        if limit is not None:
            # ASCII digits only, and short before int() reads them (it refuses > 4,300).
            if not is_ascii_number(limit) or len(limit) > 6 or not 1 <= int(limit) <= MAX_LIMIT:
                raise ValidationError(LIMIT_MESSAGE)
            value = int(limit)
        return cls(limit=value, after=after, before=before)

    @property
    def cursor(self) -> str | None:
        return self.after if self.after is not None else self.before


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    has_more: bool


def _cursor_value(model: Any, cursor: str) -> object:
    """The cursor as the id column holds it: a UUID, or a number (webhook ids)."""
    if isinstance(model.id.type, Integer):
        if not is_ascii_number(cursor) or len(cursor) > 18:
            raise ValidationError(f"Invalid cursor `{cursor}`.")
        return int(cursor)
    try:
        uuid.UUID(cursor)
    except ValueError:
        raise ValidationError(f"Invalid cursor `{cursor}`.") from None
    return cursor


async def paginate(
    session: AsyncSession, query: Select[tuple[T]], model: Any, page: PageRequest
) -> Page[T]:
    """Run ``query`` (already scoped to its list) for one page; ``model`` has id and created_at."""
    created, ident = model.created_at, model.id
    if page.cursor is not None:
        cursor = _cursor_value(model, page.cursor)
        anchor = (
            await session.execute(query.with_only_columns(created, ident).where(ident == cursor))
        ).first()
        if anchor is None:
            raise ValidationError(f"Invalid cursor `{page.cursor}`: no such object in this list.")
        at, at_id = anchor
        if page.after is not None:
            query = query.where(or_(created < at, and_(created == at, ident < at_id)))
        else:
            query = query.where(or_(created > at, and_(created == at, ident > at_id)))
    if page.before is not None:
        query = query.order_by(created.asc(), ident.asc())
    else:
        query = query.order_by(created.desc(), ident.desc())
    rows = list((await session.scalars(query.limit(page.limit + 1))).all())
    has_more = len(rows) > page.limit
    rows = rows[: page.limit]
    if page.before is not None:
        rows.reverse()
    return Page(items=rows, has_more=has_more)


def page_in_memory(items: Sequence[T], page: PageRequest, ident: Callable[[T], str]) -> Page[T]:
    """A page of a short list already read whole and in its order; cursors are ids."""
    start, end = 0, len(items)
    if page.cursor is not None:
        at = next((i for i, item in enumerate(items) if ident(item) == page.cursor), None)
        if at is None:
            raise ValidationError(f"Invalid cursor `{page.cursor}`: no such object in this list.")
        start, end = (at + 1, end) if page.after is not None else (0, at)
    if page.before is not None:
        chosen = items[max(start, end - page.limit) : end]
        return Page(chosen, end - len(chosen) > start)
    chosen = items[start : start + page.limit]
    return Page(chosen, start + len(chosen) < end)
