"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect, String
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in Python; ``timestamptz`` on PostgreSQL, naive UTC text on SQLite."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; pass an aware UTC instant")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def IdColumnType() -> String:
    return String(36)


_last_ms = 0
_sequence = 0
_entropy = b""  # os.urandom read 4 KiB at a time: one system call per 512 ids, not each
_taken = 0


def _forget_entropy() -> None:
    global _entropy, _taken, _last_ms, _sequence
    _entropy, _taken, _last_ms, _sequence = b"", 0, 0, 0


os.register_at_fork(after_in_child=_forget_entropy)  # a child never repeats its parent's


def _random_62_bits() -> int:
    global _entropy, _taken
    if _taken >= len(_entropy):
        _entropy, _taken = os.urandom(4096), 0
    value = int.from_bytes(_entropy[_taken : _taken + 8], "big") >> 2
    _taken += 8
    return value


def new_id() -> str:
    """A UUIDv7 (RFC 9562): time-ordered, so the id tie-break of a list follows creation order.

    Within one millisecond a 12-bit counter (then a bump of the timestamp) keeps ids of
    this process strictly increasing.
    """
    global _last_ms, _sequence
    now_ms = time.time_ns() // 1_000_000
    if now_ms > _last_ms:
        _last_ms, _sequence = now_ms, 0
    else:
        _sequence += 1
        if _sequence > 0xFFF:
            _last_ms, _sequence = _last_ms + 1, 0
    value = (_last_ms & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76 | _sequence << 64
    value |= 0b10 << 62 | _random_62_bits()
    # str(uuid.UUID(int=value)), without building the UUID object (three per send).
    hexed = f"{value:032x}"
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"
