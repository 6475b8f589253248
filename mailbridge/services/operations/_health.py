"""What ``GET /health`` says about the instance: the version, the database and whether
its schema is the code's, whether a runner is alive, and — when asked, since it goes
out to the network — whether the SMTP relay answers. ``mailbridge doctor`` reads it.

``/health`` is liveness: it answers while the process runs, ``"status": "degraded"``
(and no revision, no heartbeat) when the database is out of reach. ``GET /ready`` is
readiness (:func:`readiness`): the database answers and its schema is at the code's
head — what a load balancer asks before sending traffic."""

from __future__ import annotations

import asyncio
import functools
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from alembic.script import ScriptDirectory
from sqlalchemy import text

from mailbridge import __version__
from mailbridge.clock import isoformat_ms
from mailbridge.services.kernel import ServiceContext, runner_heartbeat
from mailbridge.storage.migrate import alembic_config
from mailbridge.storage.outages import describe, is_unavailable

RUNNER_SILENT_AFTER = timedelta(seconds=45)  # three missed heartbeats
RELAY_TIMEOUT = 5.0


@functools.cache
def expected_revision() -> str | None:
    """The newest migration this code knows."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


async def schema_revision(context: ServiceContext) -> str | None:
    """The migration the database is at (None: no schema yet); raises when unreachable."""
    async with context.database.session() as session:
        await session.execute(text("SELECT 1"))
        try:
            revision = await session.scalar(text("SELECT version_num FROM alembic_version"))
        except Exception as exc:  # no schema yet
            if is_unavailable(exc):
                raise
            return None
    return None if revision is None else str(revision)


async def readiness(context: ServiceContext) -> tuple[bool, str]:
    """Whether this process should be sent traffic: (ready, why not — or "ready")."""
    try:
        revision = await schema_revision(context)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return False, f"the database is unreachable ({describe(exc)})"
    if revision != expected_revision():
        return False, f"the schema is at {revision}, the code at {expected_revision()}"
    return True, "ready"


async def health_report(context: ServiceContext, *, relay: bool = False) -> dict[str, Any]:
    try:
        revision = await schema_revision(context)
        beat = await runner_heartbeat(context.database)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        revision, beat, reachable = None, None, False
    else:
        reachable = True
    report: dict[str, Any] = {
        "status": "ok" if reachable else "degraded",
        "version": __version__,
        "database": context.database.engine.dialect.name,
        "revision": revision,
        "revision_expected": expected_revision(),
        "runner": {
            "heartbeat_at": isoformat_ms(beat) if beat else None,
            "alive": beat is not None and context.clock.now() - beat < RUNNER_SILENT_AFTER,
        },
        # What mail that leaves would carry: its links' base (None when fine).
        "public_url": {
            "url": context.settings.public_url,
            "warning": context.settings.public_url_warning,
        },
    }
    if relay:
        report["relay"] = await relay_check(context.settings.smtp_url)
    return report


async def relay_check(url: str | None) -> dict[str, Any]:
    """Whether the relay of ``MAILBRIDGE_SMTP_URL`` answers with a 220 greeting."""
    if not url:
        return {"configured": False, "reachable": None, "detail": "no MAILBRIDGE_SMTP_URL"}
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (465 if parts.scheme == "smtps" else 25)
    where = f"{host}:{port}"
    try:
        async with asyncio.timeout(RELAY_TIMEOUT):
            reader, writer = await asyncio.open_connection(
                host, port, ssl=parts.scheme == "smtps" or None
            )
            greeting = await reader.readline()
            writer.close()
    except (OSError, TimeoutError) as exc:
        return {"configured": True, "reachable": False, "detail": f"{where}: {exc or 'timeout'}"}
    answered = greeting.startswith(b"220")
    detail = greeting.decode("latin-1").strip()[:200] or "no greeting"
    return {"configured": True, "reachable": answered, "detail": f"{where}: {detail}"}
