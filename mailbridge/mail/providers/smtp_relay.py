"""Where mail is relayed: ``MAILBRIDGE_SMTP_URL`` read into an :class:`SmtpRelay`.

``smtp://user:pass@host:587?starttls=true`` — plain SMTP, upgraded with STARTTLS when
``starttls=true`` (required), ``false`` (never) or absent (when the relay offers it);
``smtps://...:465`` — TLS from the first byte. ``verify=false`` accepts any
certificate (a relay on loopback with a self-signed one); ``timeout=30`` is the
seconds allowed to connect, and to send one message's envelope and content;
``pipelining=false`` sends one command at a time even to a relay that offers
PIPELINING (for a relay that offers it and mishandles it; the default pipelines).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from mailbridge.errors import ConfigurationError

DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class SmtpRelay:
    host: str
    port: int
    username: str | None = None
    password: str | None = None
    implicit_tls: bool = False
    starttls: bool | None = None  # None: when the relay offers it
    verify_certificates: bool = True
    timeout: float = DEFAULT_TIMEOUT
    pipelining: bool = True  # when the relay offers it (RFC 2920); pipelining=false: never

    @classmethod
    def from_url(cls, url: str) -> SmtpRelay:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ConfigurationError(
                "MAILBRIDGE_SMTP_URL must look like smtp://user:pass@host:port?starttls=true "
                "or smtps://user:pass@host:465"
            )
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        implicit_tls = parts.scheme == "smtps"
        starttls = _flag(query.get("starttls"), "starttls")
        if implicit_tls and starttls:
            raise ConfigurationError("smtps:// is TLS already; starttls=true does not apply")
        verify = _flag(query.get("verify"), "verify")
        pipelining = _flag(query.get("pipelining"), "pipelining")
        try:
            timeout = float(query.get("timeout", DEFAULT_TIMEOUT))
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"MAILBRIDGE_SMTP_URL: {exc}") from exc
        if port is None:
            port = 465 if implicit_tls else 587 if starttls else 25
        return cls(
            host=parts.hostname,
            port=port,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
            implicit_tls=implicit_tls,
            starttls=False if implicit_tls else starttls,
            verify_certificates=verify is not False,
            timeout=timeout,
            pipelining=pipelining is not False,
        )


def _flag(value: str | None, name: str) -> bool | None:
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ConfigurationError(f"MAILBRIDGE_SMTP_URL: {name}={value!r} is neither true nor false")


def ehlo_name(hostname: str) -> str:
    """What to say in EHLO: a domain name, or an address literal (``[127.0.0.1]``)."""
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        return hostname
    return f"[IPv6:{address}]" if address.version == 6 else f"[{address}]"
