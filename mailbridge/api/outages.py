"""The API's answer when the database is out of reach: 503 ``service_unavailable`` with
``retry-after`` (DESIGN §6) and one log line without a traceback — never the 500 of a
bug. What counts as out of reach is :func:`mailbridge.storage.outages.is_unavailable`.
"""

from __future__ import annotations

import logging

from mailbridge.errors import ServiceUnavailable
from mailbridge.storage.outages import describe, is_unavailable

logger = logging.getLogger(__name__)


def unavailable_error(exc: BaseException, where: str) -> ServiceUnavailable | None:
    """The 503 to answer for ``exc`` when it says the database is unreachable (logged
    once, as one line naming ``where``); None when it is something else."""
    if not is_unavailable(exc):
        return None
    logger.warning("database unavailable during %s: %s", where, describe(exc))
    return ServiceUnavailable()
