"""Webhooks (spec §4.10, §6): the endpoints a team registers for the events it wants.

- Ids are numeric strings; a non-numeric, unknown or foreign id is 404 ``not_found``.
- ``endpoint`` is an http(s) URL of at most 2,048 characters. A host that is (or
  resolves now to) a private, loopback, link-local or otherwise non-public address is
  refused (422) unless ``MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE`` is set; the same rule is
  applied again to the address connected to at every attempt (``mail.targets``). A
  name that does not resolve yet is accepted: its attempts fail until it does.
- ``events`` is a non-empty list of the names in :data:`WEBHOOK_EVENTS`; unknown names
  are a 422 naming them; repeats are dropped.
- The signing secret (``whsec_`` + 24 random bytes in standard base64, the form
  Standard Webhooks libraries decode) is stored, since it signs every delivery, and
  shown only in the create answer and in the answer of a rotation. A rotation keeps
  the secret before it signing beside the new one for :data:`ROTATION_OVERLAP`, so
  that a receiver can switch in its own time; rotating again within that day drops the
  oldest.
- ``status`` is ``enabled`` or ``disabled``; the runner disables a webhook whose
  attempts have failed for ``MAILBRIDGE_WEBHOOK_DISABLE_AFTER`` (3 days) with no
  success, and says why in ``disabled_reason``. PATCH ``status: enabled`` re-enables.
  Disabling (either way) fails the webhook's queued deliveries; they can be replayed.
- DELETE removes the webhook and its deliveries, queued retries included, at once.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.config import Settings
from mailbridge.errors import NotFound, ValidationError
from mailbridge.mail.targets import TargetRefused, check_addresses, parse_url, resolve
from mailbridge.services.webhooks import _deliveries as webhook_deliveries
from mailbridge.storage.pagination import Page, PageRequest, paginate
from mailbridge.storage.queries import is_ascii_number
from mailbridge.storage.tables import Webhook

EMAIL_EVENTS = (
    "email.sent", "email.scheduled", "email.delivered", "email.delivery_delayed",
    "email.bounced", "email.complained", "email.opened", "email.clicked", "email.failed",
    "email.suppressed", "email.received", "email.replied",
)  # fmt: skip
CONTACT_EVENTS = ("contact.created", "contact.updated", "contact.deleted")
DOMAIN_EVENTS = ("domain.created", "domain.updated", "domain.deleted")
# Recorded by the automation engine as runs change state; data {id, automation_id,
# contact_id, status}.
AUTOMATION_RUN_EVENTS = (
    "automation.run.started", "automation.run.completed", "automation.run.failed",
    "automation.run.cancelled",
)  # fmt: skip
# Recorded by the campaign runner: all recipients handed to delivery; an A/B winner.
CAMPAIGN_EVENTS = ("campaign.sent", "campaign.ab_decided")
# A recipient voted through a poll's link (or changed the vote); data {poll_id, option,
# label, contact_id, email}.
POLL_EVENTS = ("poll.voted",)
# Recorded by services.inboxes (their data: README "Inboxes", services.inboxes._events).
INBOX_EVENTS = (
    "inbox.created", "inbox.updated", "inbox.deleted", "inbox.thread.created",
    "inbox.email.received", "inbox.email.sent", "inbox.thread.updated",
    "inbox.thread.folder.updated", "inbox.thread.assigned", "inbox.thread.unassigned",
    "inbox.thread.labels.updated", "inbox.draft.created", "inbox.draft.updated",
    "inbox.draft.sent", "inbox.draft.deleted",
)  # fmt: skip
WEBHOOK_EVENTS: tuple[str, ...] = (
    *EMAIL_EVENTS, *CONTACT_EVENTS, *DOMAIN_EVENTS, *AUTOMATION_RUN_EVENTS, *CAMPAIGN_EVENTS,
    *POLL_EVENTS, *INBOX_EVENTS,
)  # fmt: skip
KNOWN_EVENTS = frozenset(WEBHOOK_EVENTS)

MAX_ENDPOINT_LENGTH = 2048
# The endpoints `check_endpoint` takes, for the OpenAPI document: http(s) with a host of
# DNS labels (or a dotted address), an optional user and port, and printable ASCII
# after. The service is laxer (it takes what `httpx.URL` parses), and still refuses a
# host that is, or resolves to, a non-public address.
_DNS_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
ENDPOINT_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z0-9._~%!$&'()*+,;=:-]*@)?"
    rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*(?::[0-9]{{0,5}})?(?:[/?#][!-~]*)?$"
)
SECRET_PREFIX = "whsec_"
ROTATION_OVERLAP = timedelta(hours=24)  # the previous secret still signs this long
RESOLVE_TIMEOUT = 2.0  # seconds the create/update check waits for DNS before accepting
_MAX_ID = 2**31 - 1  # the id column is a 32-bit integer on PostgreSQL

Status = Literal["enabled", "disabled"]


@dataclass(frozen=True)
class WebhookChanges:
    """PATCH /webhooks/:id; None leaves a field as it is."""

    endpoint: str | None = None
    events: Sequence[str] | None = None
    status: Status | None = None


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def check_events(events: Sequence[str]) -> list[str]:
    """The subscribed names, in the order given and without repeats; 422 if any is unknown."""
    if not events:
        raise ValidationError("`events` must name at least one event.")
    unknown = [name for name in events if name not in KNOWN_EVENTS]
    if unknown:
        raise ValidationError(
            f"Unknown event{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}. "
            f"Known events: {', '.join(WEBHOOK_EVENTS)}."
        )
    return list(dict.fromkeys(events))


async def check_endpoint(endpoint: str, settings: Settings) -> str:
    """``endpoint`` if it is an http(s) URL that is not (now) a private target; else 422."""
    endpoint = endpoint.strip()
    if len(endpoint) > MAX_ENDPOINT_LENGTH:
        raise ValidationError(f"`endpoint` must be at most {MAX_ENDPOINT_LENGTH} characters.")
    try:
        url = parse_url(endpoint, "webhook endpoint")
        if settings.webhook_allow_private:
            return endpoint
        port = url.port or (443 if url.scheme == "https" else 80)
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            addresses = await resolve(url.host, port)
        check_addresses(url, addresses, allow_private=False)
    except TargetRefused as exc:
        if exc.temporary:  # does not resolve (yet): checked again at every attempt
            return endpoint
        raise ValidationError(f"`endpoint`: {exc}.") from None
    except TimeoutError:
        return endpoint
    return endpoint


def parse_id(webhook_id: str) -> int:
    """The number a webhook id names; 404 when it names none (spec §4.10)."""
    if not is_ascii_number(webhook_id) or len(webhook_id) > 10 or int(webhook_id) > _MAX_ID:
        raise NotFound("Webhook not found.")
    return int(webhook_id)


async def create_webhook(
    session: AsyncSession,
    clock: Clock,
    settings: Settings,
    team_id: str,
    endpoint: str,
    events: Sequence[str],
) -> Webhook:
    subscribed = check_events(events)
    endpoint = await check_endpoint(endpoint, settings)
    now = clock.now()
    webhook = Webhook(
        team_id=team_id,
        endpoint=endpoint,
        events=subscribed,
        secret=new_secret(),
        status="enabled",
        created_at=now,
        updated_at=now,
    )
    session.add(webhook)
    await session.commit()
    return webhook


async def list_webhooks(session: AsyncSession, team_id: str, page: PageRequest) -> Page[Webhook]:
    return await paginate(session, select(Webhook).where(Webhook.team_id == team_id), Webhook, page)


async def get_webhook(
    session: AsyncSession, team_id: str, webhook_id: str, *, for_update: bool = False
) -> Webhook:
    query = select(Webhook).where(Webhook.id == parse_id(webhook_id), Webhook.team_id == team_id)
    if for_update:
        query = query.with_for_update()
    webhook: Webhook | None = await session.scalar(query)
    if webhook is None:
        raise NotFound("Webhook not found.")
    return webhook


async def update_webhook(
    session: AsyncSession,
    clock: Clock,
    settings: Settings,
    team_id: str,
    webhook_id: str,
    changes: WebhookChanges,
) -> Webhook:
    webhook = await get_webhook(session, team_id, webhook_id, for_update=True)
    if changes.events is not None:
        webhook.events = check_events(changes.events)
    if changes.endpoint is not None:
        webhook.endpoint = await check_endpoint(changes.endpoint, settings)
    now = clock.now()
    if changes.status == "enabled" and webhook.status != "enabled":
        webhook.status = "enabled"
        webhook.disabled_reason = None
        webhook.failing_since = None
    elif changes.status == "disabled" and webhook.status != "disabled":
        webhook.status = "disabled"
        webhook.disabled_reason = "Disabled through the API."
        await webhook_deliveries.abandon_pending(session, [webhook.id], now, "webhook disabled")
    webhook.updated_at = now
    await session.commit()
    return webhook


async def delete_webhook(session: AsyncSession, team_id: str, webhook_id: str) -> Webhook:
    """Remove the webhook; its deliveries go with it (foreign key cascade), so no queued
    retry is attempted after the commit."""
    webhook = await get_webhook(session, team_id, webhook_id)
    await session.delete(webhook)
    await session.commit()
    return webhook


async def rotate_secret(
    session: AsyncSession, clock: Clock, team_id: str, webhook_id: str
) -> Webhook:
    """A new signing secret; the one before signs beside it for :data:`ROTATION_OVERLAP`."""
    webhook = await get_webhook(session, team_id, webhook_id, for_update=True)
    now = clock.now()
    webhook.previous_secret, webhook.secret = webhook.secret, new_secret()
    webhook.previous_secret_until = now + ROTATION_OVERLAP
    webhook.updated_at = now
    await session.commit()
    return webhook


def webhook_view(webhook: Webhook) -> dict[str, Any]:
    return {
        "object": "webhook",
        "id": str(webhook.id),
        "endpoint": webhook.endpoint,
        "events": list(webhook.events),
        "status": webhook.status,
        "disabled_reason": webhook.disabled_reason,
        "created_at": isoformat_ms(webhook.created_at),
        "updated_at": isoformat_ms(webhook.updated_at),
    }


def created_webhook_view(webhook: Webhook) -> dict[str, Any]:
    """The create answer: the only one that carries the signing secret."""
    return {**webhook_view(webhook), "signing_secret": webhook.secret}
