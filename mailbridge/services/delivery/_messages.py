"""The message an email row becomes at delivery: attachments, tracking, unsubscribe, DKIM.

- attachments: the stored bytes, or the ``path`` fetched now (``mail.attachments``),
  within 25 MB a file and 40 MB an email;
- html: rewritten for open and click tracking when the sending domain asks for it
  (``mail.tracking.rewrite_html``);
- marketing mail: one-click unsubscribe headers (``mail.tracking.unsubscribe_url``);
- signed with the sending domain's DKIM key — composing and signing by the
  ``mail.rendering`` renderer, on the event loop or in a worker process;
- envelope sender ``bounces+<email id>-<tag>@<return path>.<domain>``: the return-path
  subdomain whose MX and SPF the domain publishes, and an address that names the
  email with a tag keyed to it and the envelope's recipient (``mail.return_path``), so
  a bounce that arrives later can be matched to both and nobody else can speak for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import httpx

from mailbridge.clock import Clock
from mailbridge.config import Settings
from mailbridge.mail import dkim, tracking
from mailbridge.mail.attachments import (
    MAX_ATTACHMENT_BYTES,
    MAX_EMAIL_ATTACHMENT_BYTES,
    AttachmentFetchError,
    FetchPolicy,
    fetch_attachment,
)
from mailbridge.mail.compose import AttachmentPart, Unsubscribe, unsubscribe_mailto
from mailbridge.mail.providers.base import PermanentFailure, TemporaryFailure
from mailbridge.mail.rendering import LocalRenderer, Renderer, RenderJob, SigningKey, Tracking
from mailbridge.mail.return_path import return_path_address
from mailbridge.storage.tables import Domain, Email, EmailAttachment

logger = logging.getLogger(__name__)


class MessageNotBuilt(Exception):
    """The email cannot become a message (now, or ever): carries the outcome to record."""

    def __init__(self, outcome: TemporaryFailure | PermanentFailure) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


@dataclass(frozen=True)
class BuiltMessage:
    sender: str
    content: bytes


def envelope_sender(
    email: Email, domain: Domain | None, secret: bytes, envelope: tuple[str, ...] = ()
) -> str:
    """The return path of the envelope to ``envelope``: tagged for its recipient when it
    has one, for the email alone when it has several."""
    if domain is None:
        return email.from_email
    recipient = envelope[0] if len(envelope) == 1 else None
    host = f"{domain.return_path}.{domain.name}"
    return return_path_address(secret, email.id, host, recipient)


class MessageBuilder:
    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        secret: bytes,
        http: httpx.AsyncClient,
        renderer: Renderer | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.secret = secret
        self.http = http
        self.renderer = renderer or LocalRenderer()
        self.fetch_policy = FetchPolicy(
            allow_private=settings.webhook_allow_private,
            timeout=settings.attachment_fetch_timeout,
        )

    async def build(
        self,
        email: Email,
        domain: Domain | None,
        attachments: Sequence[EmailAttachment],
        contents: dict[str, bytes],
    ) -> BuiltMessage:
        """The signed message; ``contents`` holds the stored bytes by attachment id.
        Raises :class:`MessageNotBuilt`."""
        parts = await self._attachment_parts(attachments, contents)
        signing_key = None
        if domain is not None and domain.dkim_private_key:
            signing_key = SigningKey(domain.name, domain.dkim_selector, domain.dkim_private_key)
        job = RenderJob.of(
            email,
            date=self.clock.now(),
            attachments=tuple(parts),
            unsubscribe=self._unsubscribe(email, domain),
            tracking=self._tracking(domain),
            signing_key=signing_key,
            text_from_html=self.settings.text_from_html,
        )
        try:
            message = await self.renderer.render(job)
        except dkim.DkimError as exc:
            raise MessageNotBuilt(PermanentFailure(str(exc))) from exc
        except (BrokenProcessPool, RuntimeError):
            raise  # the renderer, not this message: the email is tried again
        except Exception as exc:
            # Whatever the message itself holds that composing cannot write will not get
            # better by waiting: the email fails now (and email.failed goes out).
            logger.exception("email %s cannot be composed", email.id)
            reason = f"the message could not be composed: {type(exc).__name__}"
            raise MessageNotBuilt(PermanentFailure(reason)) from exc
        return BuiltMessage(envelope_sender(email, domain, self.secret), message)

    def _unsubscribe(self, email: Email, domain: Domain | None) -> Unsubscribe | None:
        if not email.marketing:
            return None
        url = tracking.unsubscribe_url(self.settings.public_url, self.secret, email.id)
        mailto = unsubscribe_mailto(email, domain.name, domain.return_path) if domain else None
        return Unsubscribe(url, mailto)

    def _tracking(self, domain: Domain | None) -> Tracking | None:
        if domain is None or not (domain.open_tracking or domain.click_tracking):
            return None
        return Tracking(
            self.settings.public_url, self.secret, domain.open_tracking, domain.click_tracking
        )

    async def _attachment_parts(
        self, attachments: Sequence[EmailAttachment], contents: dict[str, bytes]
    ) -> list[AttachmentPart]:
        parts: list[AttachmentPart] = []
        total = 0
        for attachment in attachments:
            content = contents.get(attachment.id)
            if content is None and attachment.path:
                content = await self._fetch(attachment, MAX_EMAIL_ATTACHMENT_BYTES - total)
            if content is None:
                raise MessageNotBuilt(
                    PermanentFailure(f"attachment {attachment.filename!r} has no content")
                )
            total += len(content)
            if len(content) > MAX_ATTACHMENT_BYTES:
                raise MessageNotBuilt(
                    PermanentFailure(f"attachment {attachment.filename!r} is larger than 25 MB")
                )
            if total > MAX_EMAIL_ATTACHMENT_BYTES:
                raise MessageNotBuilt(PermanentFailure("the attachments exceed 40 MB in total"))
            parts.append(
                AttachmentPart(
                    attachment.filename,
                    attachment.content_type,
                    content,
                    attachment.content_id,
                )
            )
        return parts

    async def _fetch(self, attachment: EmailAttachment, email_budget: int) -> bytes:
        assert attachment.path is not None
        limit = min(MAX_ATTACHMENT_BYTES, email_budget)
        try:
            return await fetch_attachment(
                self.http, attachment.path, policy=self.fetch_policy, limit=max(limit, 0)
            )
        except AttachmentFetchError as exc:
            reason = f"attachment {attachment.filename!r}: {exc}"
            if exc.too_large and limit < MAX_ATTACHMENT_BYTES:
                reason = (
                    f"attachment {attachment.filename!r}: the attachments exceed 40 MB in total"
                )
            outcome = TemporaryFailure(reason) if exc.temporary else PermanentFailure(reason)
            raise MessageNotBuilt(outcome) from exc
