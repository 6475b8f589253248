"""Suppressions: the addresses a team does not send to, and why.

Owns ``suppressions``: reserved documentation and testing names dropped on every send,
the rule that records an address (a hard bounce, a complaint, an unsubscribe, an
operator's entry), the lookups the send path makes before accepting
(``suppressed_among``, inline on SQLite), and the list the API manages
(``/suppressions``: add, remove, find, list, in batches).
"""

from __future__ import annotations

from mailbridge.services.suppressions._list import (
    MAX_SUPPRESSION_BATCH_SIZE,
    add_suppression,
    add_suppressions,
    find_suppression,
    list_suppressions,
    remove_suppression,
    remove_suppressions,
    suppression_summary,
    suppression_view,
)
from mailbridge.services.suppressions._suppress import (
    listed_addresses,
    suppress,
    suppressed_among,
    suppressed_among_inline,
    suppression_row,
)

__all__ = [
    "MAX_SUPPRESSION_BATCH_SIZE",
    "add_suppression",
    "add_suppressions",
    "find_suppression",
    "list_suppressions",
    "listed_addresses",
    "remove_suppression",
    "remove_suppressions",
    "suppress",
    "suppressed_among",
    "suppressed_among_inline",
    "suppression_row",
    "suppression_summary",
    "suppression_view",
]
