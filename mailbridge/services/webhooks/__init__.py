"""Webhooks: subscriptions, the deliveries made for them, and activity dispatch.

Owns ``webhooks`` and ``webhook_deliveries``, and hands every activity event, once, to
its consumers (``default_consumers``: the webhook fan-out, then those other contexts
registered with ``register_consumer`` — the automations' built-in triggers). The
runner's webhook worker claims deliveries and sends them with ``WebhookSender``.
"""

from __future__ import annotations

from mailbridge.services.webhooks._activity_dispatch import (
    ActivityConsumer,
    any_undispatched,
    default_consumers,
    dispatch_batch,
    register_consumer,
)
from mailbridge.services.webhooks._deliveries import (
    WEBHOOK_RETRY_POLICY,
    ClaimedDelivery,
    DeliveryOutcome,
    claim_due_deliveries,
    delivery_view,
    get_delivery,
    list_deliveries,
    next_delivery_due_at,
    record_outcomes,
    release_deliveries,
    replay_delivery,
)
from mailbridge.services.webhooks._events import (
    attempt_view,
    attempts_of,
    event_summary_view,
    event_view,
    get_event,
    list_events,
    page_of_attempts,
    replay_event,
)
from mailbridge.services.webhooks._sender import WebhookSender
from mailbridge.services.webhooks._signatures import delivery_headers
from mailbridge.services.webhooks._subscriptions import (
    ENDPOINT_PATTERN,
    MAX_ENDPOINT_LENGTH,
    WEBHOOK_EVENTS,
    WebhookChanges,
    create_webhook,
    created_webhook_view,
    delete_webhook,
    get_webhook,
    list_webhooks,
    rotate_secret,
    update_webhook,
    webhook_view,
)

__all__ = [
    "ENDPOINT_PATTERN",
    "MAX_ENDPOINT_LENGTH",
    "WEBHOOK_EVENTS",
    "WEBHOOK_RETRY_POLICY",
    "ActivityConsumer",
    "ClaimedDelivery",
    "DeliveryOutcome",
    "WebhookChanges",
    "WebhookSender",
    "any_undispatched",
    "attempt_view",
    "attempts_of",
    "claim_due_deliveries",
    "create_webhook",
    "created_webhook_view",
    "default_consumers",
    "delete_webhook",
    "delivery_headers",
    "delivery_view",
    "dispatch_batch",
    "event_summary_view",
    "event_view",
    "get_delivery",
    "get_event",
    "get_webhook",
    "list_deliveries",
    "list_events",
    "list_webhooks",
    "next_delivery_due_at",
    "page_of_attempts",
    "record_outcomes",
    "register_consumer",
    "release_deliveries",
    "replay_delivery",
    "replay_event",
    "rotate_secret",
    "update_webhook",
    "webhook_view",
]
