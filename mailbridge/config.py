"""Settings read from the environment (prefix ``MAILBRIDGE_``); names are DESIGN §7."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MAILBRIDGE_", extra="ignore")

    data_dir: Path = Field(default=Path("./var"), description="outbox, blobs and the SQLite file")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL; unset means SQLite at <data_dir>/mailbridge.db",
    )
    database_schema: str | None = Field(
        default=None, description="PostgreSQL schema to use (search_path); unset means public"
    )
    redis_url: str | None = None
    metrics_token: str | None = Field(
        default=None,
        description="GET /metrics needs it as a bearer token; unset: loopback callers only",
    )
    smtp_url: str | None = None
    test_domain: str = "simulator.mailbridge.dev"
    dns_nameserver: str | None = None
    send_rate_limit: str = "60/minute"
    rate_limit_fail_open: bool = Field(
        default=True,
        description="Redis out of reach: allow sends unlimited (true) or refuse them with 503 "
        "service_unavailable (false); either way one warning an outage",
    )
    webhook_allow_private: bool = False

    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    log_format: Literal["text", "json"] = Field(
        default="text", description="json: one JSON object a line (mailbridge.cli.log_lines)"
    )
    request_log_retention_days: int = 30
    # Where an inbox's agent is asked what to do with a new message (none: not asked), the
    # secret its requests are signed with (a webhook's kind: whsec_ and base64), and the
    # seconds it has to answer.
    inbox_agent_url: str | None = None
    inbox_agent_secret: SecretStr | None = None
    inbox_agent_timeout: float = Field(default=30.0, gt=0)
    # Days a thread stays in an inbox's trash before it is removed for good.
    inbox_trash_retention_days: int = Field(default=30, ge=1)
    runner_poll_interval: float = Field(default=0.25, gt=0, le=0.25)
    public_url: str = Field(
        default="http://127.0.0.1:8000",
        description="where recipients reach this service (tracking and unsubscribe links)",
    )
    text_from_html: bool = Field(
        default=True,
        description="an email given only html gets a text/plain alternative made from it",
    )
    allow_reserved_recipients: bool = Field(
        default=False,
        description="send to reserved documentation and testing names (RFC 2606, RFC 6761: "
        "example.com, .test, ...) instead of dropping them: for test setups",
    )
    default_plan: str = Field(
        default="unlimited",
        description="the plan of the team `mailbridge bootstrap` (so `make run`) creates: "
        "free, pro or unlimited",
    )
    contacts_write_timeout: float = Field(
        default=30.0, gt=0, description="seconds a contact write may take before it is rolled back"
    )
    secret_key: str | None = Field(
        default=None,
        description="signs tracking and unsubscribe links; unset: generated once, kept in the db",
    )
    batch_time_budget: float = Field(
        default=10.0,
        gt=0,
        description="seconds POST /emails/batch may take before batch_incomplete",
    )
    smtp_pool_size: int = Field(default=8, ge=1, le=100, description="SMTP connections kept open")
    smtp_idle_timeout: float = Field(
        default=30.0, gt=0, description="seconds a pooled SMTP connection may sit idle before QUIT"
    )
    delivery_concurrency: int = Field(default=128, ge=1, description="emails in flight at once")
    delivery_batch_size: int = Field(default=200, ge=1, description="emails claimed per query")
    delivery_lease_seconds: float = Field(default=120.0, gt=0)
    # The SMTP listener of `serve` and `mailbridge inbound`: host:port, or "off".
    inbound_smtp: str = "127.0.0.1:2525"
    inbound_hostname: str | None = None  # the name the listener greets with
    inbound_tls_cert: str | None = None  # PEM files: STARTTLS is offered when both are set
    inbound_tls_key: str | None = None
    inbound_authentication: bool = True  # record SPF, DKIM and DMARC results
    # A campaign's step renews it; a killed runner's campaign is taken up after it.
    campaign_lease_seconds: float = Field(default=60.0, gt=0)
    attachment_fetch_timeout: float = Field(default=30.0, gt=0)
    webhook_timeout: float = Field(
        default=15.0, gt=0, description="seconds a webhook endpoint has to answer an attempt"
    )
    webhook_concurrency: int = Field(default=128, ge=1, description="webhook POSTs in flight")
    webhook_batch_size: int = Field(default=200, ge=1, description="deliveries claimed per query")
    webhook_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="a claimed delivery comes back this long after its runner died",
    )
    webhook_disable_after: float = Field(
        default=3 * 86400,
        gt=0,
        description="seconds of failing attempts before a webhook is disabled",
    )
    domain_recheck_interval: float = Field(
        default=6 * 3600, gt=0, description="seconds between the runner's domain re-verifications"
    )
    shutdown_timeout: float = Field(
        default=10.0,
        gt=0,
        description="seconds from SIGTERM to exit: requests, deliveries and webhooks in flight "
        "get parts of it, the rest is cancelled and released",
    )
    max_body_bytes: int = Field(
        default=40 * 1024 * 1024,
        ge=1024,
        description="largest request body accepted (413 payload_too_large past it)",
    )
    # Bench switches (bench/send.py): the hand-written hot paths against the library paths
    # they replace, side by side in one run. Not for production use.
    bench_send_shortcut: bool = Field(
        default=True, description="bench only: answer JSON sends ahead of FastAPI's routing"
    )
    bench_inline_sqlite_writes: bool = Field(
        default=True, description="bench only: hot SQLite writes inline, not through aiosqlite"
    )

    @model_validator(mode="after")
    def _agent_signs(self) -> Settings:
        if self.inbox_agent_url and not self.inbox_agent_secret:
            raise ValueError(
                "MAILBRIDGE_INBOX_AGENT_URL needs MAILBRIDGE_INBOX_AGENT_SECRET, the secret "
                "its requests are signed with: whsec_ and base64 of random bytes, as "
                "`python -c \"import base64, os; print('whsec_' + "
                'base64.b64encode(os.urandom(24)).decode())"` prints'
            )
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'mailbridge.db').as_posix()}"

    @property
    def public_url_warning(self) -> str | None:
        """What is wrong with ``public_url`` for mail that leaves: ``http://`` with a host
        the internet reaches (RFC 8058 one-click unsubscribe needs HTTPS; mailbox
        providers ignore the link otherwise). None when fine, or on a local name."""
        parts = urlsplit(self.public_url)
        if parts.scheme != "http" or not _is_public_host(parts.hostname or ""):
            return None
        return (
            f"MAILBRIDGE_PUBLIC_URL is {self.public_url}: unsubscribe and tracking links go "
            "out over plain http, and mailbox providers honour one-click unsubscribe only "
            "over https (RFC 8058); serve it behind TLS and set an https:// URL"
        )

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")


_LOCAL_SUFFIXES = (".localhost", ".local", ".test", ".example", ".invalid", ".internal", ".lan")


def _is_public_host(host: str) -> bool:
    """Whether ``host`` names a place on the internet (not loopback, private, link-local,
    nor a reserved or local-only name)."""
    name = host.strip("[]").lower().rstrip(".")
    try:
        return ipaddress.ip_address(name).is_global
    except ValueError:
        pass
    return "." in name and not name.endswith(_LOCAL_SUFFIXES)
