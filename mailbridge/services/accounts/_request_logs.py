"""The request log behind GET /logs.

Every authenticated API request is recorded. Entries are buffered in memory and
written in groups (one commit for many requests), so logging never puts a database
commit on the request's own path; GET /logs flushes first, so a caller always sees
its own earlier requests.

Nothing secret is stored: the path, the query string and both bodies go through
``mailbridge.redaction`` (secret-named fields, and the shapes of keys, sessions, webhook
secrets, invitation and signed links) when the entry is written. A view-only member
reads this log; an invitation link in it would make them an admin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert, select, update

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import NotFound
from mailbridge.redaction import JSON_HINTS, mask_text, redact, redact_query
from mailbridge.storage.database import Database
from mailbridge.storage.outages import describe, is_unavailable
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import SqliteWriter
from mailbridge.storage.tables import ApiKey, RequestLog
from mailbridge.storage.types import new_id

logger = logging.getLogger(__name__)

MAX_STORED_BODY = 16 * 1024
MAX_STORED_PATH = 2048  # the column's size; masking may lengthen a path
FLUSH_CHUNK = 50
BULKY_KEYS = frozenset({"content"})  # attachment payloads: their size is kept, not their bytes
BULKY_HINT = b"content"


@dataclass  # not frozen: a frozen dataclass's __init__ costs several times more, per request
class LogEntry:
    team_id: str
    api_key_id: str | None
    member_id: str | None
    method: str
    path: str
    query: str | None
    status: int
    user_agent: str | None
    duration_ms: int
    request_body: CapturedBody
    response_body: CapturedBody
    created_at: datetime

    def row(self) -> dict[str, Any]:
        """The stored row; redacted here, off the request's own path."""
        values = dict(self.__dict__)
        values["id"] = new_id()
        values["path"] = mask_text(self.path)[:MAX_STORED_PATH]
        values["query"] = redact_query(self.query) if self.query else self.query
        values["request_body"] = self.request_body.redacted()
        values["response_body"] = self.response_body.redacted()
        return values


@dataclass
class CapturedBody:
    raw: bytes
    truncated: bool = False

    def redacted(self) -> str | None:
        return redact_body(self.raw, self.truncated)


SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _redact(value: Any) -> Any:
    return redact(value, BULKY_KEYS)


def _may_need_redaction(raw: bytes) -> bool:
    """False when redaction cannot change ``raw``: no secret name or shape, no bulky key,
    no escape that could spell one (``mailbridge.redaction.JSON_HINTS``), and ASCII only
    (a non-ASCII letter may fold to a secret name's)."""
    if not raw.isascii():
        return True
    lowered = raw.lower()  # searched lower-cased: IGNORECASE costs five times more
    return BULKY_HINT in lowered or JSON_HINTS.search(lowered) is not None


def redact_body(raw: bytes, truncated: bool = False) -> str | None:
    """The body as stored in the log: JSON with secrets redacted, capped in size."""
    if not raw:
        return None
    if truncated:
        return json.dumps({"omitted": "body too large to log"})
    try:
        parsed = json.loads(raw)
        # Walking the parsed body and encoding it again are most of the cost: when
        # redaction would change nothing, the body (valid JSON, and ASCII) is stored as it
        # came — unless it escapes a surrogate, which may be a lone one.
        if _may_need_redaction(raw) or SURROGATE_ESCAPE.search(raw):
            text = json.dumps(_redact(parsed), separators=(",", ":"), ensure_ascii=False)
            # A lone surrogate (refused by the API, still logged) becomes "?": the log
            # answers text that encodes.
            text = text.encode("utf-8", "replace").decode("utf-8")
        else:
            text = raw.decode("ascii")
    except RecursionError:
        return json.dumps({"omitted": "body nested too deeply to log"})
    except (ValueError, UnicodeDecodeError):
        return json.dumps({"omitted": "body is not JSON"})
    if len(text) > MAX_STORED_BODY:
        return json.dumps({"omitted": "body too large to log"})
    return text


class RequestLogSink:
    """Collects entries and writes them in groups; ``flush`` forces a write."""

    def __init__(self, database: Database, *, max_pending: int = 500) -> None:
        self._database = database
        self._pending: list[LogEntry] = []
        self._max_pending = max_pending
        self._lock = asyncio.Lock()
        self._wakeup = asyncio.Event()

    def record(self, entry: LogEntry) -> None:
        self._pending.append(entry)
        if len(self._pending) >= self._max_pending:
            self._wakeup.set()

    async def flush(self) -> None:
        async with self._lock:
            entries, self._pending = self._pending, []
            # In chunks, letting requests run in between: a flush under load holds
            # hundreds of entries, and encoding them at once stalled every request.
            for start in range(0, len(entries), FLUSH_CHUNK):
                if start:
                    await asyncio.sleep(0)
                await self._write(entries[start : start + FLUSH_CHUNK])

    async def _write(self, entries: list[LogEntry]) -> None:
        rows = [entry.row() for entry in entries]
        last_used: dict[str, datetime] = {}
        for entry in entries:
            if entry.api_key_id:
                seen = last_used.get(entry.api_key_id, entry.created_at)
                last_used[entry.api_key_id] = max(seen, entry.created_at)
        writer = self._database.sqlite_writer
        if writer is not None:
            await writer.transaction(
                lambda connection: _write_inline(writer, connection, rows, last_used)
            )
            return
        async with self._database.session() as session:
            await session.execute(insert(table_of(RequestLog)), rows)
            for key_id, used_at in last_used.items():
                await session.execute(
                    update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=used_at)
                )
            await session.commit()

    async def run(self, interval: float = 0.05) -> None:
        """Flush every ``interval`` seconds (or sooner when the buffer fills) until cancelled.

        Often, so that each flush is small: under load a flush every half second encoded
        a great many entries at once, and the requests around it waited (a far worse p99).
        """
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=interval)
            self._wakeup.clear()
            try:
                await self.flush()
            except Exception as exc:
                if is_unavailable(exc):  # one line, not a traceback every 50 ms
                    logger.warning("request log entries dropped: database unavailable (%s)",
                                   describe(exc))  # fmt: skip
                else:
                    logger.exception("writing the request log failed; entries dropped")


def _write_inline(
    writer: SqliteWriter,
    connection: sqlite3.Connection,
    rows: list[dict[str, Any]],
    last_used: dict[str, datetime],
) -> None:
    writer.insert(connection, table_of(RequestLog), rows)
    instant = ApiKey.last_used_at.type
    connection.executemany(
        "UPDATE api_keys SET last_used_at = ? WHERE id = ?",
        [(writer.value(instant, used_at), key_id) for key_id, used_at in last_used.items()],
    )


def log_view(row: RequestLog, *, with_bodies: bool) -> dict[str, Any]:
    view: dict[str, Any] = {
        "object": "log",
        "id": row.id,
        "created_at": isoformat_ms(row.created_at),
        "method": row.method,
        "endpoint": row.path,
        "query": row.query,
        "response_status": row.status,
        "user_agent": row.user_agent,
        "api_key_id": row.api_key_id,
        "duration_ms": row.duration_ms,
    }
    if with_bodies:
        view["request_body"] = json.loads(row.request_body) if row.request_body else None
        view["response_body"] = json.loads(row.response_body) if row.response_body else None
    return view


async def list_logs(database: Database, team_id: str, page: PageRequest) -> Page[RequestLog]:
    async with database.session() as session:
        query = select(RequestLog).where(RequestLog.team_id == team_id)
        return await paginate(session, query, RequestLog, page)


async def get_log(database: Database, team_id: str, log_id: str) -> RequestLog:
    async with database.session() as session:
        row = await session.scalar(
            select(RequestLog).where(RequestLog.team_id == team_id, RequestLog.id == log_id)
        )
    if row is None:
        raise NotFound("Log not found.")
    return row


async def purge_old_logs(database: Database, clock: Clock, retention: timedelta) -> int:
    async with database.session() as session:
        result = await session.execute(
            delete(RequestLog).where(RequestLog.created_at < clock.now() - retention)
        )
        await session.commit()
    return int(getattr(result, "rowcount", 0) or 0)
