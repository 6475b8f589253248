"""Download links of a thread's files: a received file's as ``/emails/receiving`` signs
them, a sent one's as ``/emails/:id/attachments`` does (a file sent from a URL keeps
that URL). Each works for an hour, like the ones those routes hand out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from mailbridge.clock import isoformat_ms
from mailbridge.mail.signed_links import RECEIVED_ATTACHMENT, download_url, received_url

LINK_LIFETIME = timedelta(hours=1)


@dataclass(frozen=True)
class Links:
    base_url: str
    secret: bytes
    now: datetime

    def _expires_at(self) -> datetime:
        return (self.now + LINK_LIFETIME).replace(microsecond=0)  # a link's whole seconds

    def received(self, attachment_id: str) -> tuple[str | None, str | None]:
        expires_at = self._expires_at()
        url = received_url(
            self.base_url, self.secret, RECEIVED_ATTACHMENT, attachment_id, expires_at
        )
        return url, isoformat_ms(expires_at)

    def sent(self, attachment_id: str, path: str | None) -> tuple[str | None, str | None]:
        if path:
            return path, None
        expires_at = self._expires_at()
        url = download_url(self.base_url, self.secret, attachment_id, expires_at)
        return url, isoformat_ms(expires_at)
