"""``GET /emails/metrics``: counts and rates of the team's mail over a range (Resend's
``emails.metrics``; the rules in ``services.email`` ``_metric_query`` and ``_metrics``).

Included before ``email_reading``: ``/emails/metrics`` is not an email id.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from mailbridge.api.deps import ContextDep, Reader, SessionDep
from mailbridge.services import email as emails
from mailbridge.services.email import MetricsQuery
from mailbridge.wire import declared

router = APIRouter(tags=["emails"])

Text = Annotated[str | None, Query()]
List = Annotated[str | None, Query(description="comma-separated")]
Granularity = Annotated[str, declared(enum=list(emails.GRANULARITIES))]


@router.get("/emails/metrics")
async def email_metrics(
    principal: Reader,
    session: SessionDep,
    context: ContextDep,
    start_date: Text = None,
    end_date: Text = None,
    timezone: Text = None,
    granularity: Annotated[Granularity | None, Query()] = None,
    metrics: List = None,
    dimensions: List = None,
    domain_id: List = None,
    email_id: List = None,
    broadcast_id: List = None,
) -> dict[str, Any]:
    query = MetricsQuery.parse(
        context.clock.now(),
        start_date=start_date,
        end_date=end_date,
        timezone=timezone,
        granularity=granularity,
        metrics=metrics,
        dimensions=dimensions,
        domain_id=domain_id,
        email_id=email_id,
        broadcast_id=broadcast_id,
    )
    return await emails.email_metrics(session, principal.team_id, query)
