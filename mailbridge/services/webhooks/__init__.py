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
from mailbridge.services.webhooks._deliveries import RETRY_POLICY as WEBHOOK_RETRY_POLICY
from mailbridge.services.webhooks._deliveries import (
    ClaimedDelivery,
    delivery_view,
    get_delivery,
    list_deliveries,
    record_outcomes,
    replay_delivery,
)
from mailbridge.services.webhooks._deliveries import Outcome as DeliveryOutcome
from mailbridge.services.webhooks._deliveries import claim_due as claim_due_deliveries
from mailbridge.services.webhooks._deliveries import next_due_at as next_delivery_due_at
from mailbridge.services.webhooks._deliveries import release as release_deliveries
from mailbridge.services.webhooks._sender import WebhookSender
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
    "claim_due_deliveries",
    "create_webhook",
    "created_webhook_view",
    "default_consumers",
    "delete_webhook",
    "delivery_view",
    "dispatch_batch",
    "get_delivery",
    "get_webhook",
    "list_deliveries",
    "list_webhooks",
    "next_delivery_due_at",
    "record_outcomes",
    "register_consumer",
    "release_deliveries",
    "replay_delivery",
    "update_webhook",
    "webhook_view",
]
