"""The send path's shortcuts give the answers of the long way round: shared cache loads,
the redaction pre-check, in-memory rate windows, the SQLite row encoder and the address
check's plain-ASCII shortcut."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from limits import parse
from sqlalchemy.dialects import sqlite
from starlette.types import Message, Receive, Scope, Send

from mailbridge.api.app import create_app, telemetry_config
from mailbridge.api.rate_limit import LocalWindows
from mailbridge.api.send_path import SendPath
from mailbridge.config import Settings
from mailbridge.mail.addresses import _valid, _validated, is_reserved
from mailbridge.services.accounts._request_logs import _redact, redact_body
from mailbridge.services.email._acceptance import EmailWriter
from mailbridge.services.kernel import ServiceContext, TTLCache
from mailbridge.storage.json_text import json_encoder
from mailbridge.storage.queries import table_of
from mailbridge.storage.sqlite_writer import RowEncoder
from mailbridge.storage.tables import Email


async def test_concurrent_misses_share_one_load() -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=60)
    loads = 0
    release = asyncio.Event()

    async def load() -> int:
        nonlocal loads
        loads += 1
        await release.wait()
        return 42

    waiting = [asyncio.create_task(cache.get_or_load("k", load)) for _ in range(20)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiting) == [42] * 20
    assert loads == 1
    assert await cache.get_or_load("k", load) == 42 and loads == 1


async def test_a_failed_load_is_not_shared() -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=60)
    release = asyncio.Event()
    errors: list[ValueError] = []

    async def load() -> int:
        await release.wait()
        errors.append(ValueError("no such key"))
        raise errors[-1]

    waiting = [asyncio.create_task(cache.get_or_load("k", load)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert len(errors) == 3  # each caller looked up for itself ...
    assert sorted(map(id, outcomes)) == sorted(map(id, errors))  # ... and got its own error
    assert cache.get("k") is None


KEYS = st.sampled_from(
    ["to", "from", "subject", "html", "token", "Api_Key", "signing_secret", "content",
     "cont\\u0065nt", "\u017fecret", "name", "value", "AUTHORIZATION"]
)  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=300),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(KEYS | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)


@given(JSON_VALUES, st.booleans())
def test_the_redaction_shortcut_stores_what_the_full_walk_stores(
    value: Any, ascii_only: bool
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode()
    walked = json.dumps(_redact(json.loads(raw)), separators=(",", ":"))
    too_large = json.dumps({"omitted": "body too large to log"})
    stored = redact_body(raw)
    assert stored is not None
    if len(walked) > 16 * 1024:
        assert stored == too_large
    elif stored != too_large or len(raw) <= 16 * 1024:  # stored as sent only when short
        assert json.loads(stored) == json.loads(walked)


def test_escaped_and_folded_secret_keys_are_still_redacted() -> None:
    for raw in (b'{"\\u0074oken": "mb_1"}', '{"\u017fecret": "mb_1"}'.encode()):
        assert "mb_1" not in (redact_body(raw) or "")


def test_local_windows_count_like_a_fixed_window(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_000.0]
    monkeypatch.setattr("mailbridge.api.rate_limit.time.time", lambda: now[0])
    windows = LocalWindows(parse("3/minute"))
    assert [windows.hit("1.2.3.4")[:2] for _ in range(4)] == [
        (True, 2), (True, 1), (True, 0), (False, 0),
    ]  # fmt: skip
    assert windows.hit("5.6.7.8")[:2] == (True, 2)  # per client
    assert windows.hit("1.2.3.4")[2] == 1_060.0  # closes a period after the first hit
    now[0] = 1_060.0
    assert windows.hit("1.2.3.4") == (True, 2, 1_120.0)


def test_the_row_encoder_encodes_as_the_column_types_do() -> None:
    dialect = sqlite.dialect()
    table = table_of(Email)
    now = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    blank: dict[str, Any] = {column.key: None for column in table.columns}
    rows: list[dict[str, Any]] = [
        blank
        | {"id": "a", "to": ["x@y.io"], "cc": [], "headers": {}, "tags": [{"name": "k"}],
           "marketing": True, "created_at": now, "updated_at": now,
           "due_at": now + timedelta(microseconds=5)},
        blank
        | {"id": "b", "to": [], "cc": ["z@y.io"], "headers": {"X-A": "é 1"}, "tags": [],
           "marketing": False, "created_at": now, "due_at": None,
           "updated_at": now.astimezone(timezone(timedelta(hours=2)))},
    ]  # fmt: skip
    encoder = RowEncoder(table, dialect, list(rows[0]))
    expected = []
    for row in rows:
        values = []
        for key in encoder.keys:
            processor = table.columns[key].type.dialect_impl(dialect).bind_processor(dialect)
            values.append(processor(row[key]) if processor else row[key])
        expected.append(tuple(values))
    assert encoder.encode(rows) == expected
    assert expected[0][encoder.keys.index("created_at")] == "2026-11-02 09:00:00.000000"
    assert expected[1][encoder.keys.index("updated_at")] == "2026-11-02 09:00:00.000000"
    with pytest.raises(ValueError, match="naive"):
        encoder.encode([rows[0] | {"created_at": now.replace(tzinfo=None)}])


@given(JSON_VALUES | st.floats(), st.booleans(), st.booleans())
def test_the_prebuilt_json_encoder_writes_what_json_dumps_writes(
    value: Any, compact: bool, ascii_only: bool
) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    encode = json_encoder(separators, ensure_ascii=ascii_only, allow_nan=True)
    assert encode(value) == json.dumps(value, separators=separators, ensure_ascii=ascii_only)
    strict = json_encoder(separators, allow_nan=False)
    with pytest.raises(ValueError):
        strict([float("nan")])


LOCAL_PARTS = st.sampled_from(["user", "User.Name+tag", "a..b", ".a", "a.", "Postmaster",
                               "o'brien", "x" * 70, '"quoted"', "ünï", "a b", ""])  # fmt: skip
DOMAINS = st.sampled_from(["corp.io", "Corp.IO", "xn--bcher-kva.com", "bücher.com", "b",
                           "-b.com", "corp.io.", "[1.2.3.4]", "a_b.com", "x" * 64 + ".com",
                           ("y" * 60 + ".") * 4 + "com", "c@d.org"])  # fmt: skip


@given(
    st.emails()
    | st.builds(lambda local, domain: f"{local}@{domain}", LOCAL_PARTS, DOMAINS)
    | st.builds(lambda local, domain: f"{local}@{domain}", st.text(max_size=12), DOMAINS)
    | st.text(alphabet="aZ9.+-_@\"'() <>[]ü", max_size=20)
)
def test_the_address_shortcut_answers_as_email_validator(address: str) -> None:
    if "@" not in address or not is_reserved(address):  # reserved names have their own rule
        assert _valid(address) == _validated(address)


async def test_a_body_the_shortcut_cannot_read_reaches_the_route_whole() -> None:
    received: list[Message] = []

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        received.extend([await receive(), await receive()])

    chunks: list[Message] = [
        {"type": "http.request", "body": b'{"from": ', "more_body": True},
        {"type": "http.request", "body": b'"a@b.io", ', "more_body": False},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return chunks.pop(0)

    async def send(message: Message) -> None:
        raise AssertionError("the shortcut answered")

    scope = {"type": "http", "method": "POST", "path": "/emails",
             "headers": [(b"content-type", b"application/json")]}  # fmt: skip
    shortcut = SendPath(route, context=cast(ServiceContext, None), writer=cast(EmailWriter, None))
    await shortcut(scope, receive, send)
    assert received == [
        {"type": "http.request", "body": b'{"from": "a@b.io", ', "more_body": False},
        {"type": "http.disconnect"},
    ]


def test_fastapi_telemetry_is_on_only_where_the_environment_asks_for_it() -> None:
    off = {"tracing": False, "metrics": False, "logs": False}
    assert telemetry_config({"PATH": "/bin"}) == off
    assert telemetry_config({"OTEL_SERVICE_NAME": "mailbridge"}) == {}
    assert telemetry_config({"FASTAPI_OTEL_AUTO_CONFIGURE": "true"}) == {}
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    assert not app._native_telemetry.enabled()


async def settle() -> None:
    """Let the tasks started so far run until they wait."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_an_entry_past_half_its_life_is_answered_while_one_lookup_replaces_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr("mailbridge.services.kernel._cache.time.monotonic", lambda: now[0])
    cache: TTLCache[str, int] = TTLCache(ttl=1.0)
    loads: list[asyncio.Event] = []
    value = [1]

    async def load() -> int:
        loads.append(asyncio.Event())
        await loads[-1].wait()
        return value[0]

    first = asyncio.create_task(cache.get_or_load("k", load))
    await settle()
    loads[0].set()
    assert await first == 1
    now[0] += 0.4  # young: no lookup
    assert await cache.get_or_load("k", load) == 1 and len(loads) == 1
    now[0] += 0.2  # past half its life: answered at once, one lookup behind it
    value[0] = 2
    assert [await cache.get_or_load("k", load) for _ in range(5)] == [1] * 5
    await settle()
    assert len(loads) == 2
    loads[1].set()
    await settle()
    assert await cache.get_or_load("k", load) == 2 and len(loads) == 2
    now[0] += 1.0  # expired: the caller waits for the lookup
    waiting = asyncio.create_task(cache.get_or_load("k", load))
    await settle()
    assert not waiting.done() and len(loads) == 3
    value[0] = 3
    loads[2].set()
    assert await waiting == 3


async def test_a_failed_refresh_drops_the_entry_and_a_clear_outlives_a_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr("mailbridge.services.kernel._cache.time.monotonic", lambda: now[0])
    cache: TTLCache[str, int] = TTLCache(ttl=1.0)

    async def revoked() -> int:
        raise ValueError("key revoked")

    cache.put("k", 1)
    now[0] += 0.6
    assert await cache.get_or_load("k", revoked) == 1  # answered; the refresh fails behind it
    await settle()
    assert cache.get("k") is None
    with pytest.raises(ValueError, match="revoked"):
        await cache.get_or_load("k", revoked)

    release = asyncio.Event()

    async def slow() -> int:
        await release.wait()
        return 2

    cache.put("k", 1)
    now[0] += 0.6
    assert await cache.get_or_load("k", slow) == 1
    cache.clear()  # e.g. the key was revoked through this process meanwhile
    release.set()
    await settle()
    assert cache.get("k") is None  # the lookup begun before the clear is not kept


async def test_settling_stops_the_refreshes_still_running(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("mailbridge.services.kernel._cache.time.monotonic", lambda: now[0])
    cache: TTLCache[str, int] = TTLCache(ttl=1.0)
    stopped = asyncio.Event()

    async def endless() -> int:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return 2

    cache.put("k", 1)
    now[0] += 0.6
    assert await cache.get_or_load("k", endless) == 1
    await settle()
    await cache.settle()
    assert stopped.is_set() and cache.get("k") is None
