"""Where messages go: an SMTP relay, the file outbox, or (test domain) the simulator.

``base`` says what a provider is; ``provider_from_settings`` picks the relay when
``MAILBRIDGE_SMTP_URL`` is set and the outbox under ``MAILBRIDGE_DATA_DIR`` otherwise.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mailbridge.config import Settings
from mailbridge.mail.providers.base import (
    Accepted,
    Delivery,
    Handover,
    Outcome,
    PermanentFailure,
    Provider,
    TemporaryFailure,
    Unconfirmed,
)
from mailbridge.mail.providers.outbox import OutboxProvider
from mailbridge.mail.providers.smtp import SmtpProvider
from mailbridge.mail.providers.smtp_relay import SmtpRelay

OUTBOX_DIRECTORY = "outbox"
RECEIPTS_DIRECTORY = "handovers"

__all__ = [
    "Accepted",
    "Delivery",
    "Handover",
    "OutboxProvider",
    "Outcome",
    "PermanentFailure",
    "Provider",
    "SmtpProvider",
    "SmtpRelay",
    "TemporaryFailure",
    "Unconfirmed",
    "provider_from_settings",
]


def provider_from_settings(settings: Settings) -> Provider:
    if settings.smtp_url:
        return SmtpProvider(
            SmtpRelay.from_url(settings.smtp_url),
            pool_size=settings.smtp_pool_size,
            idle_timeout=settings.smtp_idle_timeout,
            local_hostname=urlsplit(settings.public_url).hostname or "localhost",
            receipts=settings.data_dir / RECEIPTS_DIRECTORY,
        )
    return OutboxProvider(settings.data_dir / OUTBOX_DIRECTORY)
