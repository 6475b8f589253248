"""Pages about mail: the overview, emails and one email's timeline, domains and their
DNS records, received mail, webhooks and their deliveries, the request log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from mailbridge.dashboard._common import (
    act,
    api_as,
    badge,
    code,
    failed,
    link,
    listing,
    member,
    next_href,
)
from mailbridge.dashboard._render import page
from mailbridge.dashboard._session import context_of
from mailbridge.services.operations import health_report, team_overview

router = APIRouter()

EMAIL_STATUSES = [
    "queued", "scheduled", "sent", "delivered", "delivery_delayed", "bounced", "complained",
    "opened", "clicked", "failed", "canceled", "suppressed",
]  # fmt: skip


def _addresses(value: Any) -> str:
    return ", ".join(value) if isinstance(value, list) else str(value or "")


@router.get("")
async def overview(request: Request) -> Response:
    me = await member(request)
    context = context_of(request)
    async with context.database.session() as session:
        summary = await team_overview(session, context.clock, me.principal.team_id)
    health = await health_report(context)
    async with api_as(request, me) as api:
        latest = await api.get("/emails", limit=10)
    recent = [
        [link(_addresses(e.get("to")), f"/dashboard/emails/{e['id']}"), e.get("subject"),
         badge(e.get("status")), e.get("created_at")]
        for e in latest.items()
    ]  # fmt: skip
    status_rows = [[badge(s), n] for s, n in sorted(summary.by_status_today.items())]
    return page(request, "overview.html", me, title="Overview", active="/dashboard",
                overview=summary, health=health, recent=recent,
                status_rows=status_rows)  # fmt: skip


@router.get("/emails")
async def emails(
    request: Request, status: str | None = None, recipient: str | None = None,
    after: str | None = None,
) -> Response:  # fmt: skip
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get("/emails", status=status, recipient=recipient, after=after)
    rows = [
        [link(_addresses(e.get("to")), f"/dashboard/emails/{e['id']}"), e.get("from"),
         e.get("subject"), badge(e.get("status")), e.get("created_at")]
        for e in answer.items()
    ]  # fmt: skip
    return page(
        request, "listing.html", me, title="Emails", active="/dashboard/emails",
        filters=[("status", "Status", status, EMAIL_STATUSES),
                 ("recipient", "Recipient", recipient, None)],
        columns=["To", "From", "Subject", "Status", "Created"], rows=rows,
        empty=answer.message or "No email matches.", next_href=next_href(request, answer),
    )  # fmt: skip


@router.get("/emails/{email_id}")
async def email(request: Request, email_id: str) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/emails/{email_id}")
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/emails")
    return page(request, "email.html", me, title=answer.body.get("subject") or "Email",
                active="/dashboard/emails", email=answer.body)  # fmt: skip


@router.get("/domains")
async def domains(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/domains",
        lambda d: [link(d.get("name"), f"/dashboard/domains/{d['id']}"), badge(d.get("status")),
                   d.get("region"), d.get("created_at")],
        after=after, title="Domains", active="/dashboard/domains",
        columns=["Domain", "Status", "Region", "Created"],
        empty="No domain yet: add one with the API or `mailbridge domains create`.",
    )  # fmt: skip


@router.get("/domains/{domain_id}")
async def domain(request: Request, domain_id: str, flash: str | None = None) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/domains/{domain_id}")
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/domains")
    records = [
        [r.get("record"), code(r.get("type")), code(r.get("name")), code(r.get("value"), wrap=True),
         r.get("priority", ""), badge(r.get("status"))]
        for r in answer.body.get("records", [])
    ]  # fmt: skip
    return page(request, "domain.html", me, title=answer.body.get("name"),
                active="/dashboard/domains", domain=answer.body, records=records,
                flash=flash)  # fmt: skip


@router.post("/domains/{domain_id}/verify")
async def verify_domain(
    request: Request, domain_id: str, csrf: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    return await act(
        request,
        csrf,
        "POST",
        f"/domains/{domain_id}/verify",
        back=f"/dashboard/domains/{domain_id}",
        done=f"/dashboard/domains/{domain_id}?flash=Verification+started",
    )


@router.get("/received")
async def received(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/emails/receiving",
        lambda r: [link(r.get("subject") or "(no subject)", f"/dashboard/received/{r['id']}"),
                   r.get("from"), _addresses(r.get("to")), badge(r.get("kind")),
                   r.get("created_at")],
        after=after, title="Received mail", active="/dashboard/received",
        columns=["Subject", "From", "To", "Kind", "Received"], empty="Nothing received yet.",
    )  # fmt: skip


@router.get("/received/{received_id}")
async def received_one(request: Request, received_id: str, images: bool = False) -> Response:
    """One received message; its remote images load only when the member asks
    (``images``), for this view of this message."""
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/emails/receiving/{received_id}")
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/received")
    return page(request, "received.html", me, title=answer.body.get("subject") or "Received",
                active="/dashboard/received", mail=answer.body, images=images)  # fmt: skip


@router.get("/webhooks")
async def webhooks(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/webhooks",
        lambda w: [link(w.get("endpoint") or w.get("url"), f"/dashboard/webhooks/{w['id']}"),
                   ", ".join(w.get("events") or []), badge(w.get("status")),
                   w.get("created_at")],
        after=after, title="Webhooks", active="/dashboard/webhooks",
        columns=["Endpoint", "Events", "Status", "Created"], empty="No webhook yet.",
    )  # fmt: skip


@router.get("/webhooks/{webhook_id}")
async def webhook(
    request: Request, webhook_id: str, status: str | None = None, flash: str | None = None
) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        hook = await api.get(f"/webhooks/{webhook_id}")
        deliveries = await api.get(f"/webhooks/{webhook_id}/deliveries", status=status)
    if not hook.ok:
        return failed(request, me, hook, "/dashboard/webhooks")
    return page(request, "webhook.html", me, title="Webhook", active="/dashboard/webhooks",
                hook=hook.body, deliveries=deliveries.items(), flash=flash,
                next_href=next_href(request, deliveries))  # fmt: skip


@router.post("/webhooks/{webhook_id}/deliveries/{delivery_id}/replay")
async def replay(
    request: Request, webhook_id: str, delivery_id: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:  # fmt: skip
    return await act(
        request,
        csrf,
        "POST",
        f"/webhooks/{webhook_id}/deliveries/{delivery_id}/replay",
        back=f"/dashboard/webhooks/{webhook_id}",
        done=f"/dashboard/webhooks/{webhook_id}?flash=Replay+queued",
    )


@router.get("/logs")
async def logs(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/logs",
        lambda e: [code(f"{e.get('method')} {e.get('endpoint')}", wrap=True),
                   badge(e.get("response_status")), e.get("user_agent"),
                   f"{e.get('duration_ms', '')} ms", e.get("created_at")],
        after=after, title="Logs", active="/dashboard/logs",
        intro="Every API request of the team, newest first.",
        columns=["Request", "Status", "Client", "Took", "At"], empty="No request logged yet.",
    )  # fmt: skip
