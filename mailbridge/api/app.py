"""The FastAPI application factory; nothing is created at import time."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.telemetry import TelemetryConfig

from mailbridge import __version__, dashboard
from mailbridge.api import openapi
from mailbridge.api.body_guard import BodyGuard
from mailbridge.api.envelope import install_error_handlers
from mailbridge.api.included_routes import include
from mailbridge.api.literal_segments import LiteralPaths, literal_paths, literal_tails
from mailbridge.api.metrics import HttpMetrics
from mailbridge.api.metrics import router as metrics_router
from mailbridge.api.middleware import ApiMiddleware
from mailbridge.api.rate_limit import RateCounters, SendRateLimit
from mailbridge.api.request_ids import RequestIds
from mailbridge.api.routers import (
    api_keys,
    audiences,
    automations,
    broadcasts,
    campaigns,
    contact_imports,
    contact_properties,
    contacts,
    domains,
    email_metrics,
    email_reading,
    email_shares,
    emails,
    event_intake,
    events,
    health,
    inbox_drafts,
    inbox_threads,
    inboxes,
    logs,
    members,
    polls,
    receiving,
    segments,
    suppressions,
    templates,
    topics,
    tracking,
    usage,
    webhooks,
)
from mailbridge.api.security_headers import PUBLIC_PAGE, SecurityHeaders
from mailbridge.api.send_path import SendPath
from mailbridge.config import Settings
from mailbridge.runner import Runner
from mailbridge.services import inbound
from mailbridge.services.accounts import RequestLogSink
from mailbridge.services.email import EmailWriter
from mailbridge.services.kernel import ServiceContext

logger = logging.getLogger(__name__)

# Order matters for speed: routes are matched one by one, so the send path comes first.
ROUTERS = (
    emails.router,
    event_intake.router,
    health.router,
    api_keys.router,
    members.router,
    logs.router,
    usage.router,
    domains.router,
    audiences.router,
    contact_imports.router,  # before contacts: /contacts/imports is not a contact
    contacts.router,
    contact_properties.router,
    segments.router,
    topics.router,
    templates.router,
    polls.router,
    automations.router,
    campaigns.router,
    broadcasts.router,
    events.router,
    receiving.router,  # before email_reading: /emails/receiving is not an email id
    email_metrics.router,  # and /emails/metrics neither
    email_reading.router,
    email_shares.router,
    email_shares.pages,
    suppressions.router,
    webhooks.router,
    inboxes.router,
    inbox_threads.router,
    inbox_drafts.router,
    tracking.router,
)


async def _start_inbound(context: ServiceContext) -> asyncio.Server | None:
    """``serve``'s SMTP listener (``MAILBRIDGE_INBOUND_SMTP``), unless off; a port that is
    taken is logged, and the rest of ``serve`` runs on."""
    where = inbound.parse_listen_address(context.settings.inbound_smtp)
    if where is None:
        return None
    try:
        server, _handler = await inbound.start_listener(context, *where)
    except OSError as exc:
        logger.error("not receiving mail: cannot listen on %s:%d: %s", *where, exc)
        return None
    return server


def telemetry_config(environ: Mapping[str, str]) -> TelemetryConfig:
    """FastAPI's native OpenTelemetry, on only where the environment asks for OpenTelemetry.

    Left on, FastAPI asks the global providers on every request whether anybody listens
    (costing every send); nobody does unless an SDK was configured, which the environment
    says: ``OTEL_*`` variables (``opentelemetry-instrument`` and the SDK read them) or
    ``FASTAPI_OTEL_AUTO_CONFIGURE``.
    """
    wanted = any(name.startswith("OTEL_") for name in environ) or (
        environ.get("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true"
    )
    return {} if wanted else {"tracing": False, "metrics": False, "logs": False}


def create_app(
    settings: Settings | None = None,
    *,
    context: ServiceContext | None = None,
    with_runner: bool = False,
) -> FastAPI:
    """Build the API. ``with_runner`` also runs the runner's loops in this process (serve)."""
    owns_context = context is None
    if context is None:
        context = ServiceContext.from_settings(settings or Settings())
    log_sink = RequestLogSink(context.database)
    runner = Runner(context) if with_runner else None
    rate_counters = RateCounters(context.settings)
    email_writer = EmailWriter(
        context.database, context.clock, on_stored=runner.notify if runner else None
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if (warning := context.settings.public_url_warning) is not None:
            logger.warning(warning)
        flusher = asyncio.create_task(log_sink.run(), name="request-log-flusher")
        writer = asyncio.create_task(email_writer.run(), name="email-writer")
        listener = None
        if runner is not None:
            await runner.start_in_background()
            listener = await _start_inbound(context)
        try:
            yield
        finally:
            if listener is not None:
                listener.close()
            if runner is not None:
                await runner.stop()
            for task in (writer, flusher):
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            await log_sink.flush()
            await context.settle()
            rate_counters.close()
            if owns_context:
                await context.database.dispose()

    app = FastAPI(
        title="mailbridge",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        telemetry=telemetry_config(os.environ),
    )
    app.state.context = context
    app.state.log_sink = log_sink
    app.state.runner = runner
    app.state.email_writer = email_writer
    install_error_handlers(app)
    for router in ROUTERS:
        include(app, router, with_errors=True)
    for pages in dashboard.PAGES:
        include(app, pages.router, prefix=dashboard.PREFIX, include_in_schema=False)
    dashboard.install(app)
    include(app, metrics_router)
    openapi.install(app)
    if context.settings.bench_send_shortcut:
        app.add_middleware(SendPath, context=context, writer=email_writer)
    api_routes = [r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute)]
    app.add_middleware(
        LiteralPaths, paths=literal_paths(api_routes), tails=literal_tails(api_routes)
    )
    app.add_middleware(BodyGuard, max_body_bytes=context.settings.max_body_bytes)
    app.add_middleware(SendRateLimit, counters=rate_counters)
    app.add_middleware(ApiMiddleware, context=context, log_sink=log_sink)
    app.add_middleware(RequestIds)  # around ApiMiddleware: its lines carry the id
    # around every answer the middlewares give: nosniff on all, the dashboard's policy on its own
    app.add_middleware(
        SecurityHeaders,
        under={
            dashboard.PREFIX: dashboard.HEADERS,
            **{prefix: PUBLIC_PAGE for prefix in ("/t", "/polls/vote", "/share")},
        },
    )
    app.add_middleware(HttpMetrics, routes=app.router.routes)  # outermost: times all
    return app
