"""Download links of a thread's files: a received file's as ``/emails/receiving`` signs
them (``inbound.Links``), a sent one's as ``/emails/:id/attachments`` does (a file sent
from a URL keeps that URL). Each works for the same hour."""

from __future__ import annotations

from dataclasses import dataclass

from mailbridge.clock import isoformat_ms
from mailbridge.mail.signed_links import RECEIVED_ATTACHMENT, download_url
from mailbridge.services import inbound
from mailbridge.services.inbound import LINK_LIFETIME


@dataclass(frozen=True)
class Links(inbound.Links):
    def received(self, attachment_id: str) -> tuple[str | None, str | None]:
        return self.url(RECEIVED_ATTACHMENT, attachment_id)

    def sent(self, attachment_id: str, path: str | None) -> tuple[str | None, str | None]:
        if path:
            return path, None
        expires_at = (self.now + LINK_LIFETIME).replace(microsecond=0)  # a link's seconds
        return download_url(self.base_url, self.secret, attachment_id, expires_at), (
            isoformat_ms(expires_at)
        )
