"""Clock, settings, ids, log redaction and the validation-error translation."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.exceptions import RequestValidationError
from hypothesis import given
from hypothesis import strategies as st

from mailbridge.api.envelope import translate_validation_error
from mailbridge.clock import FakeClock, isoformat_ms
from mailbridge.config import Settings
from mailbridge.services.accounts._request_logs import redact_body
from mailbridge.storage.types import new_id


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock(datetime(2026, 5, 1, tzinfo=UTC))
    assert clock.now() == clock.now()
    assert clock.advance(90) == datetime(2026, 5, 1, 0, 1, 30, tzinfo=UTC)
    assert clock.advance(timedelta(days=1)).day == 2


def test_timestamps_are_utc_with_milliseconds() -> None:
    instant = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert isoformat_ms(instant) == "2026-05-01T12:00:00.123Z"
    assert isoformat_ms(None) is None


def test_settings_read_the_mailbridge_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILBRIDGE_DATA_DIR", "/srv/mb")
    monkeypatch.setenv("MAILBRIDGE_SEND_RATE_LIMIT", "10/second")
    monkeypatch.setenv("MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE", "true")
    settings = Settings()
    assert settings.data_dir == Path("/srv/mb")
    assert settings.resolved_database_url == "sqlite+aiosqlite:////srv/mb/mailbridge.db"
    assert settings.send_rate_limit == "10/second" and settings.webhook_allow_private
    monkeypatch.setenv("MAILBRIDGE_DATABASE_URL", "postgresql+asyncpg://u@h/db")
    assert Settings().resolved_database_url == "postgresql+asyncpg://u@h/db"
    assert not Settings().is_sqlite


def test_ids_are_uuid7_and_increase() -> None:
    ids = [new_id() for _ in range(5000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids[:10])


def test_a_forked_child_never_repeats_its_parents_ids() -> None:
    new_id()  # the parent holds buffered randomness the child must not reuse
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.write(writing, "\n".join(new_id() for _ in range(100)).encode())
        os._exit(0)
    os.close(writing)
    os.waitpid(child, 0)
    with os.fdopen(reading) as pipe:
        theirs = pipe.read().split("\n")
    ours = [new_id() for _ in range(100)]
    # The same millisecond and counter may recur; the random part must not.
    assert not {i[-12:] for i in theirs} & {i[-12:] for i in ours}


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_redaction_keeps_json_and_never_a_secret(value: object) -> None:
    body = {"token": "mb_SECRET", "nested": {"signing_secret": "whsec", "data": value}}
    stored = redact_body(json.dumps(body).encode())
    assert stored is not None
    parsed = json.loads(stored)
    assert parsed["token"] == "[redacted]" and parsed["nested"]["signing_secret"] == "[redacted]"
    assert "mb_SECRET" not in stored


def test_redaction_of_odd_bodies() -> None:
    assert redact_body(b"") is None
    assert json.loads(redact_body(b"not json") or "")["omitted"]
    assert json.loads(redact_body(b"{}", truncated=True) or "")["omitted"]
    big = json.dumps({"attachments": [{"content": "A" * 100_000}]}).encode()
    assert "AAAA" not in (redact_body(big) or "")


def _error(**fields: object) -> RequestValidationError:
    return RequestValidationError([fields])


def test_validation_errors_are_named_as_the_spec_says() -> None:
    missing = translate_validation_error(_error(type="missing", loc=("body", "from"), msg="x"))
    assert (missing.name, missing.message) == ("missing_required_field", "Missing `from` field.")
    bad_json = translate_validation_error(_error(type="json_invalid", loc=("body", 3), msg="x"))
    assert bad_json.name == "validation_error" and "JSON" in bad_json.message
    wrong = translate_validation_error(_error(type="string_type", loc=("body", "to"), msg="bad"))
    assert wrong.name == "validation_error" and "`to`" in wrong.message
    query = translate_validation_error(_error(type="missing", loc=("query", "q"), msg="x"))
    assert query.name == "validation_error"
