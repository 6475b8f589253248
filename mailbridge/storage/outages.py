"""Whether an exception says the database is out of reach, rather than that a query was
wrong: the API answers the first with 503 ``service_unavailable`` and the runner's
workers back off and try again, where the second is a bug (a 500, a traceback).

Out of reach: the server refused or dropped the connection (a PostgreSQL restart,
``pg_terminate_backend``, a network cut), it is starting up or shutting down, it has
no connection slot left, the pool had none to give in time, or a SQLite file stayed
locked past its busy timeout. SQLAlchemy wraps the driver's error (``.orig``), which
chains asyncpg's own (``__cause__``): the whole chain is looked at.
"""

from __future__ import annotations

import sqlite3

import asyncpg
from sqlalchemy import exc as sa

# SQLite's OperationalError says "no such table" as well: only these are outages.
_SQLITE_UNAVAILABLE = (
    "database is locked",
    "database is busy",
    "unable to open database file",
    "disk i/o error",
)
_ASYNCPG_UNAVAILABLE = (
    asyncpg.PostgresConnectionError,  # class 08, ConnectionDoesNotExistError among them
    asyncpg.exceptions.OperatorInterventionError,  # 57: admin shutdown, cannot connect now
    asyncpg.exceptions.InsufficientResourcesError,  # 53: too many connections
)
_CHAIN_LIMIT = 8


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says the database cannot be reached just now."""
    current: BaseException | None = exc
    for _ in range(_CHAIN_LIMIT):
        if current is None:
            return False
        if _says_unavailable(current):
            return True
        if isinstance(current, sa.DBAPIError) and current.orig is not None:
            if _says_unavailable(current.orig):
                return True
            current = current.orig.__cause__ or current.__cause__
        else:
            current = current.__cause__
    return False


def describe(exc: BaseException) -> str:
    """One line for the log: the exception's type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def _says_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, sa.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa.DisconnectionError | sa.TimeoutError):  # pool: no connection in time
        return True
    if isinstance(exc, _ASYNCPG_UNAVAILABLE):
        return True
    if isinstance(exc, asyncpg.InterfaceError):
        return "connection is closed" in str(exc) or "connection was closed" in str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        return str(exc).lower().startswith(_SQLITE_UNAVAILABLE)
    if isinstance(exc, sa.OperationalError | sa.InterfaceError) and not isinstance(
        exc.orig, sqlite3.Error
    ):
        return True  # asyncpg's adapter: a lost connection
    # A refused, reset or timed-out connection to the server (asyncpg raises these bare).
    return isinstance(exc, ConnectionError | TimeoutError)
