"""The server's log lines: JSON rendering, context, and secrets masked wherever they hide."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest
from structlog.contextvars import bind_contextvars, bound_contextvars, clear_contextvars

from mailbridge.cli.log_lines import REDACTED, configure, formatter, redact
from mailbridge.config import Settings

API_KEY = "mb_AbCdEfGhIj_0123456789abcdefghijABCDEFGHIJKL"
SESSION = "mbs_KlMnOpQrSt_0123456789abcdefghijABCDEFGHIJKL"
WEBHOOK_SECRET = "whsec_q1-W_e2r3t4y5u6i7o8p9a0s1d2f3g4h5j6k7l8z9x0c"
SMTP_PASSWORD = "hunter2-Pa55"
SECRETS = (API_KEY, SESSION, WEBHOOK_SECRET, SMTP_PASSWORD)


def record(
    message: str,
    *args: object,
    name: str = "mailbridge.test",
    level: int = logging.INFO,
    exc_info: logging._SysExcInfoType | None = None,
    extra: dict[str, object] | None = None,
) -> logging.LogRecord:
    made = logging.LogRecord(name, level, __file__, 1, message, args, exc_info)
    for key, value in (extra or {}).items():
        setattr(made, key, value)
    return made


def json_line(made: logging.LogRecord) -> dict[str, object]:
    line = formatter("json").format(made)
    assert "\n" not in line
    parsed: dict[str, object] = json.loads(line)
    return parsed


@pytest.fixture(autouse=True)
def no_context() -> Iterator[None]:
    clear_contextvars()
    yield
    clear_contextvars()


def test_a_json_line_has_time_level_logger_message_and_context() -> None:
    bind_contextvars(request_id="req-1", team_id="team-1")
    line = json_line(record("sent %d emails", 3, level=logging.WARNING))
    assert list(line)[:4] == ["timestamp", "level", "logger", "message"]
    assert line["message"] == "sent 3 emails"
    assert line["level"] == "warning"
    assert line["logger"] == "mailbridge.test"
    assert str(line["timestamp"]).endswith("Z") and "T" in str(line["timestamp"])
    assert line["request_id"] == "req-1" and line["team_id"] == "team-1"


def test_context_is_only_where_it_was_bound() -> None:
    with bound_contextvars(email_id="e-1"):
        assert json_line(record("inside"))["email_id"] == "e-1"
    assert "email_id" not in json_line(record("outside"))


def test_extra_fields_are_fields() -> None:
    line = json_line(record("run failed", extra={"run_id": "r-1"}))
    assert line["run_id"] == "r-1"


def test_an_exception_is_one_line_with_its_traceback() -> None:
    try:
        raise RuntimeError(f"could not connect with {API_KEY}")
    except RuntimeError:
        line = json_line(record("boom", level=logging.ERROR, exc_info=sys.exc_info()))
    exception = str(line["exception"])
    assert exception.startswith("Traceback (most recent call last)")
    assert "RuntimeError: could not connect with mb_" + REDACTED in exception
    assert API_KEY not in json.dumps(line)


def test_uvicorns_access_line_becomes_fields() -> None:
    made = record(
        '%s - "%s %s HTTP/%s" %d',
        "127.0.0.1:5000", "GET", f"/emails?api_key={API_KEY}", "1.1", 401,
        name="uvicorn.access",
    )  # fmt: skip
    line = json_line(made)
    assert line["method"] == "GET" and line["status"] == 401
    assert line["path"] == "/emails?api_key=" + REDACTED
    assert line["message"] == f"GET /emails?api_key={REDACTED} 401"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"created key {API_KEY} for acme", f"created key mb_{REDACTED} for acme"),
        (f"session={SESSION};", f"session=mbs_{REDACTED};"),
        (f"secret:{WEBHOOK_SECRET}.", f"secret:whsec_{REDACTED}."),
        (f"x_{API_KEY}", f"x_mb_{REDACTED}"),
        (
            f"relay smtp://mailer:{SMTP_PASSWORD}@smtp.example.io:587?starttls=true down",
            f"relay smtp://mailer:{REDACTED}@smtp.example.io:587?starttls=true down",
        ),
        (
            "postgresql+asyncpg://app:p@ss@db.local/mail",
            f"postgresql+asyncpg://app:{REDACTED}@db.local/mail",
        ),
        (f"Authorization: Bearer {API_KEY}", f"Authorization: Bearer {REDACTED}"),
        ("{'authorization': 'Basic dXNlcjpwYXNz'}", f"{{'authorization': 'Basic {REDACTED}'}}"),
        ("(b'authorization', b'opaque-token')", f"(b'authorization', b'{REDACTED}')"),
        ("header bearer abc.def.ghi sent", f"header bearer {REDACTED} sent"),
        ("/t/c/x?token=abc&next=1", f"/t/c/x?token={REDACTED}&next=1"),
        # nothing secret: unchanged
        ("thumb_nail at http://host:8000/a?email=bob@x.io", None),
        ("GET /emails 200", None),
    ],
)
def test_secrets_in_text_are_masked(text: str, expected: str | None) -> None:
    assert redact(text) == (text if expected is None else expected)


def test_secrets_in_fields_nested_and_named_are_masked() -> None:
    bind_contextvars(headers={"Authorization": f"Bearer {API_KEY}", "user-agent": "curl"})
    made = record(
        "webhook made",
        extra={
            "body": {"signing_secret": WEBHOOK_SECRET, "events": [f"note {SESSION}"]},
            "password": SMTP_PASSWORD,
            "attempts": 3,
        },
    )
    line = json_line(made)
    rendered = json.dumps(line)
    for secret in SECRETS:
        assert secret not in rendered
    assert line["body"] == {"signing_secret": REDACTED, "events": [f"note mbs_{REDACTED}"]}
    assert line["password"] == REDACTED
    assert line["headers"] == {"Authorization": REDACTED, "user-agent": "curl"}
    assert line["attempts"] == 3


def test_a_message_with_a_secret_argument_is_masked() -> None:
    line = json_line(record("delivering with %s via %r", API_KEY, {"secret": SESSION}))
    assert line["message"] == f"delivering with mb_{REDACTED} via {{'secret': 'mbs_{REDACTED}'}}"


def test_text_lines_are_masked_too_and_keep_the_traceback() -> None:
    try:
        raise ValueError(WEBHOOK_SECRET)
    except ValueError:
        text = formatter("text").format(
            record("failed for %s", SESSION, level=logging.ERROR, exc_info=sys.exc_info())
        )
    first, *rest = text.splitlines()
    assert first.endswith(f"ERROR mailbridge.test: failed for mbs_{REDACTED}")
    assert rest[0].startswith("Traceback")
    for secret in SECRETS:
        assert secret not in text


def test_configure_sends_every_logger_through_one_handler() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    try:
        configure(Settings(log_format="json", log_level="debug"), stream)
        logging.getLogger("uvicorn.error").info("Started server with %s", API_KEY)
        logging.getLogger("mailbridge.anything").debug("debug line")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["logger"] for line in lines] == ["uvicorn.error", "mailbridge.anything"]
    assert API_KEY not in stream.getvalue()


@pytest.mark.parametrize(("level", "shown"), [("info", False), ("debug", True)])
def test_the_scheduler_tells_each_tick_only_at_debug(level: str, shown: bool) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    try:
        configure(Settings(log_format="text", log_level=level), stream)
        logging.getLogger("apscheduler.executors.default").info('Running job "heartbeat"')
        logging.getLogger("apscheduler.scheduler").warning("Run time of job was missed")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
        logging.getLogger("apscheduler").setLevel(logging.NOTSET)
    assert ('Running job "heartbeat"' in stream.getvalue()) is shown
    assert "Run time of job was missed" in stream.getvalue()
