"""Searching an inbox's threads: full-text over each message's subject, sender,
recipients and text, by the database's own engine — SQLite's FTS5, PostgreSQL's text
search (``tsvector`` with a GIN index) — never ``LIKE`` over the bodies.

``inbox_search`` holds one row a filed message (``_filing`` adds it, purging a thread
removes its rows). It is dialect-specific (an FTS5 virtual table; a table with a
generated ``tsvector`` column), so it lives outside the models; migration 0025 makes it
and the schema comparison leaves the name alone (``SEARCH_TABLE``).

A query is words: each must appear, the last one also as the start of a word (as one
types: "refund invo" finds "invoice");
``from``/``to``/``cc``/``bcc`` narrow to messages with those addresses, and the thread
filters (folders, labels, read, has_attachment, a date range) apply to the threads. A
result is a thread with ``matched_email_id``: its best-matching message.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, literal_column, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.storage.queries import is_postgres
from mailbridge.storage.tables import SEARCH_TABLE, InboxThread

MAX_QUERY_WORDS = 20
TEXT_COLUMNS = ("subject", "sender", "recipients", "body")  # what words are looked for in
MAX_BODY = 100_000  # characters of a message's text indexed
_WORD = re.compile(r"\w+", re.UNICODE)
_TAG = re.compile(r"<[^>]*>")


def fold(value: str) -> str:
    """Without diacritics ("Zürich" → "Zurich"), as both engines then compare: FTS5's
    tokenizer folds them itself, PostgreSQL's ``simple`` configuration does not."""
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _words(query: str | None) -> list[str]:
    words = _WORD.findall(fold(query or ""))
    if len(words) > MAX_QUERY_WORDS:
        raise ValidationError(f"`query` takes at most {MAX_QUERY_WORDS} words.")
    return [word.lower() for word in words]


def plain_text(text_part: str | None, html: str | None) -> str:
    """What a message says, for the index: its text, else its HTML without the tags."""
    body = text_part if text_part else _TAG.sub(" ", html or "")
    return body[:MAX_BODY]


def search_scope(inbox_id: str) -> str:
    """The inbox's token in the FTS5 index (``scope`` column): a match reads only the
    inbox's own rows, not every team's (on PostgreSQL, ``inbox_id``'s index does it)."""
    return "i" + inbox_id.replace("-", "").lower()


async def index_message(
    session: AsyncSession, message_id: str, thread_id: str, inbox_id: str,
    subject: str | None, sender: str | None, recipients: Sequence[str], body: str,
) -> None:  # fmt: skip
    columns = "message_id, thread_id, inbox_id, subject, sender, recipients, body"
    values = ":message_id, :thread_id, :inbox_id, :subject, :sender, :recipients, :body"
    if not is_postgres(session):
        columns, values = f"{columns}, scope", f"{values}, :scope"
    await session.execute(
        text(f"INSERT INTO {SEARCH_TABLE} ({columns}) VALUES ({values})"),
        {
            "message_id": message_id, "thread_id": thread_id, "inbox_id": inbox_id,
            "subject": fold(subject or ""), "sender": fold(sender or ""),
            "recipients": fold(" ".join(recipients)), "body": fold(body),
            "scope": search_scope(inbox_id),
        },
    )  # fmt: skip


async def unindex_threads(session: AsyncSession, thread_ids: Sequence[str]) -> None:
    """Forget the messages of these threads (500 a statement: SQLite caps parameters)."""
    statement = text(f"DELETE FROM {SEARCH_TABLE} WHERE thread_id IN :ids").bindparams(
        bindparam("ids", expanding=True)
    )
    for start in range(0, len(thread_ids), 500):
        await session.execute(statement, {"ids": list(thread_ids[start : start + 500])})


def _match(
    session: AsyncSession, inbox_id: str, words: list[str], addresses: dict[str, list[str]]
) -> tuple[str, dict[str, Any]]:
    """The conditions over ``inbox_search``, the inbox's among them, and their parameters."""
    parameters: dict[str, Any] = {}
    clauses: list[str] = []
    if is_postgres(session):
        parameters["inbox_id"] = inbox_id
        clauses.append("inbox_id = :inbox_id")
        if words:
            *whole, last = words
            parameters["tsquery"] = " & ".join([*whole, f"{last}:*"])
            clauses.append("document @@ to_tsquery('simple', :tsquery)")
        for field, values in addresses.items():
            column = "sender" if field == "from" else "recipients"
            options = []
            for number, value in enumerate(values):
                parameters[f"{field}{number}"] = f"%{value}%"
                options.append(f"{column} ILIKE :{field}{number}")
            clauses.append("(" + " OR ".join(options) + ")")
        return " AND ".join(clauses), parameters
    terms = [f'scope: "{search_scope(inbox_id)}"']
    if words:
        quoted = [f'"{word}"' for word in words[:-1]] + [f'"{words[-1]}"*']
        terms.append(f"{{{' '.join(TEXT_COLUMNS)}}}: ({' AND '.join(quoted)})")
    for field, values in addresses.items():
        column = "sender" if field == "from" else "recipients"
        phrases = " OR ".join('"' + value.replace('"', "") + '"' for value in values)
        terms.append(f"{column}: ({phrases})")
    parameters["fts"] = " AND ".join(terms)
    clauses.append(f"{SEARCH_TABLE} MATCH :fts")
    return " AND ".join(clauses), parameters


class Match:
    """The search over ``inbox_search`` for one inbox: the matching threads as a subquery
    (for the thread list's own paging), and each thread's best message."""

    def __init__(
        self, session: AsyncSession, inbox_id: str, words: list[str],
        addresses: dict[str, list[str]],
    ) -> None:  # fmt: skip
        where, parameters = _match(session, inbox_id, words, addresses)
        self.where = where
        self.parameters = parameters
        if is_postgres(session):
            self.order = "ts_rank(document, to_tsquery('simple', :tsquery)) DESC" if words else "1"
        else:
            self.order = "rank"

    def threads(self) -> Any:
        """``SELECT thread_id`` of the matching rows, for ``InboxThread.id.in_(...)``."""
        return (
            select(literal_column("thread_id"))
            .select_from(text(SEARCH_TABLE))
            .where(text(self.where).bindparams(**self.parameters))
        )

    async def best(self, session: AsyncSession, thread_ids: Sequence[str]) -> dict[str, str]:
        """The best-matching message of each of ``thread_ids``."""
        if not thread_ids:
            return {}
        statement = text(
            f"SELECT thread_id, message_id FROM {SEARCH_TABLE} WHERE {self.where} "
            f"AND thread_id IN :page_threads ORDER BY {self.order}"
        ).bindparams(bindparam("page_threads", expanding=True))
        rows = await session.execute(
            statement, {**self.parameters, "page_threads": list(thread_ids)}
        )
        found: dict[str, str] = {}
        for thread_id, message_id in rows.tuples():
            found.setdefault(thread_id, message_id)
        return found


def search_match(
    session: AsyncSession, inbox_id: str, query: str | None, addresses: dict[str, list[str]]
) -> Match | None:
    """The search for ``query`` and the address filters (None: neither given)."""
    words = _words(query)
    clean = {
        field: [each.strip().lower() for each in values if each.strip()]
        for field, values in addresses.items()
    }
    clean = {field: values for field, values in clean.items() if values}
    if not words and not clean:
        return None
    return Match(session, inbox_id, words, clean)


def date_bound(value: str | None, field: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"`{field}` must be an ISO 8601 date.") from None


def thread_filters(
    has_attachment: str | None, start_date: str | None, end_date: str | None
) -> list[Any]:
    conditions: list[Any] = []
    if has_attachment is not None:
        if has_attachment not in ("true", "false"):
            raise ValidationError("`has_attachment` must be true or false.")
        conditions.append(InboxThread.has_attachment.is_(has_attachment == "true"))
    start, end = date_bound(start_date, "start_date"), date_bound(end_date, "end_date")
    if start is not None:
        conditions.append(InboxThread.latest_at >= start)
    if end is not None:
        conditions.append(InboxThread.latest_at <= end)
    return conditions
