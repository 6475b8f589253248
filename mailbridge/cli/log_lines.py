"""How the server processes write their log: one line an event, text or JSON, secrets masked.

``mailbridge serve|api|runner|inbound`` call :func:`configure` once, before anything
logs: a single handler on the root logger, so the standard-library loggers of every
module (``logging.getLogger(__name__)``), uvicorn's (its access log included: uvicorn
is started with ``log_config=None``) and any library's go through the same
rendering. ``MAILBRIDGE_LOG_FORMAT=json`` makes each line a JSON object::

    {"timestamp": "2025-01-02T03:04:05.678901Z", "level": "info", "logger": "uvicorn.access",
     "message": "GET /emails 200", "request_id": "…", "team_id": "…", "method": "GET", …}

Context comes from ``structlog.contextvars``: the API binds ``request_id`` (and
``team_id`` once authenticated) per request, the runner's workers bind ``email_id``,
``campaign_id``, ``webhook_delivery_id`` around each item; a record's ``extra`` fields
(``run_id``) are added too. An exception is one line with its traceback in
``exception``.

Secrets never reach the output: every string value of a line (the message, the
traceback, context and extra fields, nested dicts and lists) goes through
:func:`redact`, which masks API keys (``mb_…``), member session tokens (``mbs_…``),
webhook signing secrets (``whsec_…``), the password of any URL with credentials
(``MAILBRIDGE_SMTP_URL``, database and Redis URLs), ``Authorization`` values and bearer
tokens, and secret-named query parameters; a field whose name says it holds a secret
(``password``, ``token``, ``authorization``…) is masked whole.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from mailbridge.config import Settings
from mailbridge.redaction import mask_text

REDACTED: Final = "[redacted]"

# A name that says its value is a secret: the value is masked whole.
SECRET_NAME = re.compile(
    r"token|secret|passw(?:or)?d|api_?key|authorization|signing|cookie|signature", re.I
)
# Secrets inside any text. Each alternative keeps its named lead-in and masks the rest.
SECRET_TEXT = re.compile(
    # mb_ (API keys), mbs_ (member sessions), whsec_ (webhook signing secrets); not
    # preceded by a letter or digit, so "thumb_nail" stays but "x_mb_..." is masked
    r"(?P<kind>(?<![A-Za-z0-9])(?:mbs?|whsec)_)[A-Za-z0-9_\-]+"
    # the password of a URL with credentials: scheme://user:PASSWORD@host (to its last @)
    r"|(?P<userinfo>[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:]*:)[^\s/]+(?=@)"
    # an Authorization header's value, whatever the scheme
    r"|(?P<header>(?i:authorization)[\"']?\s*[:=,]\s*b?[\"']?(?:(?i:bearer|basic|token)\s+)?)"
    r"[^\s\"',;}\]]+"
    # a bearer token anywhere else
    r"|(?P<bearer>(?i:\bbearer\s+))[^\s\"',;}\]]+"
    # secret-named query parameters (?token=..., &api_key=..., &signature=...)
    r"|(?P<param>[?&;][A-Za-z0-9_\-]*(?i:token|secret|passw(?:or)?d|api_?key|signature|sig)=)"
    r"[^&\s\"'#]+"
)
# Cheap pre-check: a string containing none of these cannot match SECRET_TEXT.
_HINTS = ("_", "://", "uthorization", "earer", "=")

# Keys the renderers place first (JSON) or in the line's head (text).
_HEAD = ("timestamp", "level", "logger", "message")
# LogRecord attributes that are not extra fields.
_RECORD_KEYS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys()
    | {"message", "asctime", "color_message", "taskName"}
)


def _mask(match: re.Match[str]) -> str:
    lead = next(group for group in match.groups() if group is not None)
    return lead + REDACTED


def redact(value: Any) -> Any:
    """``value`` with every secret masked: strings searched, dicts and lists walked,
    values under secret-named keys replaced whole; anything else as it is."""
    if isinstance(value, str):
        if any(hint in value for hint in _HINTS):
            return SECRET_TEXT.sub(_mask, value)
        return value
    if isinstance(value, Mapping):
        return {
            key: (
                REDACTED
                if isinstance(key, str) and value[key] is not None and SECRET_NAME.search(key)
                else redact(value[key])
            )
            for key in value
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [redact(item) for item in value]
    return value


def redact_secrets(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """The processor: every public field of the line through :func:`redact`."""
    for key, value in event_dict.items():
        if key.startswith("_"):
            continue  # structlog's own (the LogRecord), never rendered
        if key not in _HEAD and value is not None and SECRET_NAME.search(key):
            event_dict[key] = REDACTED
        else:
            event_dict[key] = redact(value)
    return event_dict


def add_record_fields(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """A standard-library record's ``extra`` fields; uvicorn's access line as fields."""
    record: logging.LogRecord | None = event_dict.get("_record")
    args = event_dict.pop("positional_args", None)
    if record is None:
        return event_dict
    for key, value in record.__dict__.items():
        if key not in _RECORD_KEYS and not key.startswith("_"):
            event_dict.setdefault(key, value)
    if record.name == "uvicorn.access":
        # The path may carry a capability (an invitation, a signed or vote link): masked
        # here, before any rendering, by the request log's own rules.
        if isinstance(args, tuple) and len(args) == 5:
            client, method, path, _http_version, status = args
            path = mask_text(str(path))
            event_dict["event"] = f"{method} {path} {status}"
            event_dict.update(client=client, method=method, path=path, status=status)
        else:  # a line of another shape: its whole text
            event_dict["event"] = mask_text(str(event_dict.get("event", "")))
    return event_dict


def _message_key(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    if "event" in event_dict and "message" not in event_dict:
        event_dict["message"] = event_dict.pop("event")
    return event_dict


def _json_line(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> str:
    line = {key: event_dict[key] for key in _HEAD if key in event_dict}
    for key, value in event_dict.items():
        if key not in line and not key.startswith("_"):
            line[key] = value
    return json.dumps(line, default=str, separators=(",", ":"))


def _text_line(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> str:
    """The line as it always read (time, LEVEL, logger: message), context as key=value
    after it, and a traceback on the lines below."""
    exception = event_dict.pop("exception", None)
    stack = event_dict.pop("stack", None)
    head = (
        f"{event_dict.get('timestamp', '')} {str(event_dict.get('level', '')).upper()} "
        f"{event_dict.get('logger', '')}: {event_dict.get('message', '')}"
    )
    context = " ".join(
        f"{key}={value}"
        for key, value in event_dict.items()
        if key not in _HEAD and not key.startswith("_")
    )
    lines = [f"{head} {context}" if context else head]
    lines += [text for text in (stack, exception) if text]
    return "\n".join(lines)


def shared_processors() -> list[Processor]:
    """What every line goes through before it is rendered: context, time, level, logger,
    extra fields, the traceback as text, and redaction last."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        add_record_fields,
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        _message_key,
        redact_secrets,
    ]


def formatter(log_format: str) -> structlog.stdlib.ProcessorFormatter:
    """The ``logging.Formatter`` rendering a record as a line of ``log_format``."""
    render: Callable[[WrappedLogger, str, EventDict], str] = (
        _json_line if log_format == "json" else _text_line
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, render],
        pass_foreign_args=True,
    )


def level_number(level: str) -> int:
    """A level name (``trace`` is uvicorn's, below debug) as the number logging uses."""
    number = logging.getLevelName(level.upper())
    return number if isinstance(number, int) else 5


def configure(settings: Settings, stream: TextIO | None = None) -> None:
    """The root logger writes every record to ``stream`` (stderr) in
    ``settings.log_format``; structlog's own loggers (none yet) render the same way."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(settings.log_format))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    level = level_number(settings.log_level)
    root.setLevel(level)
    # APScheduler tells every run of every tick at info (the heartbeat: two lines every
    # 15 s); its warnings (a missed run) still show, the rest only at debug.
    logging.getLogger("apscheduler").setLevel(logging.WARNING if level > logging.DEBUG else 0)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
