"""The kernel every context shares, and which imports none of them.

``ServiceContext`` (settings, database, clock, the send path's hot caches),
``record_event`` (activity written in the caller's transaction), ``TTLCache`` and the
instance-wide values (the link-signing secret, the runner heartbeat).
"""

from __future__ import annotations

from mailbridge.services.kernel._activity import record_event
from mailbridge.services.kernel._cache import TTLCache
from mailbridge.services.kernel._context import SendingDomain, ServiceContext
from mailbridge.services.kernel._instance import (
    instance_secret,
    record_runner_heartbeat,
    runner_heartbeat,
)

__all__ = [
    "SendingDomain",
    "ServiceContext",
    "TTLCache",
    "instance_secret",
    "record_event",
    "record_runner_heartbeat",
    "runner_heartbeat",
]
