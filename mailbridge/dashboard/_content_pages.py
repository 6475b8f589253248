"""Pages about people and what they are sent: audiences and contacts, segments,
templates, campaigns (with the A/B chart) and automations (with the graph)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from mailbridge.dashboard._charts import ab_chart, graph_svg
from mailbridge.dashboard._common import api_as, badge, failed, link, listing, member, next_href
from mailbridge.dashboard._render import page
from mailbridge.dashboard._session import context_of
from mailbridge.errors import ApiError
from mailbridge.services import audiences, automations

router = APIRouter()


@router.get("/audiences")
async def audience_list(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/audiences",
        lambda a: [link(a.get("name"), f"/dashboard/audiences/{a['id']}"), a.get("created_at")],
        after=after, title="Audiences", active="/dashboard/audiences",
        columns=["Audience", "Created"], empty="No audience yet.",
    )  # fmt: skip


@router.get("/audiences/{audience_id}")
async def audience(
    request: Request, audience_id: str, email_contains: str | None = None,
    after: str | None = None,
) -> Response:  # fmt: skip
    me = await member(request)
    async with api_as(request, me) as api:
        found = await api.get(f"/audiences/{audience_id}")
        answer = await api.get(
            "/contacts", audience_id=audience_id, email_contains=email_contains, after=after
        )
    if not found.ok:
        return failed(request, me, found, "/dashboard/audiences")
    rows = [
        [link(c.get("email"), f"/dashboard/contacts/{c['id']}"),
         " ".join(filter(None, [c.get("first_name"), c.get("last_name")])),
         badge("unsubscribed" if c.get("unsubscribed") else "subscribed"), c.get("created_at")]
        for c in answer.items()
    ]  # fmt: skip
    return page(request, "listing.html", me, title=f"Audience: {found.body.get('name')}",
                active="/dashboard/audiences",
                filters=[("email_contains", "Email contains", email_contains, None)],
                columns=["Email", "Name", "Subscription", "Created"], rows=rows,
                empty=answer.message or "No contact matches.",
                next_href=next_href(request, answer))  # fmt: skip


@router.get("/contacts/{contact_id}")
async def contact(request: Request, contact_id: str) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        found = await api.get(f"/contacts/{contact_id}")
        if not found.ok:
            return failed(request, me, found, "/dashboard/audiences")
        sent = await api.get("/emails", recipient=found.body.get("email"), limit=20)
        segments = await api.get(f"/contacts/{contact_id}/segments")
    context = context_of(request)
    async with context.database.session() as session:
        runs = await automations.runs_of_contact(session, me.principal.team_id, contact_id)
    emails = [
        [link(e.get("subject") or "(no subject)", f"/dashboard/emails/{e['id']}"),
         badge(e.get("status")), e.get("created_at")]
        for e in sent.items()
    ]  # fmt: skip
    run_rows = [
        [link(run.automation_id, f"/dashboard/automations/{run.automation_id}?run={run.id}"),
         badge(run.status), run.step_key, run.created_at.isoformat()]
        for run in runs
    ]  # fmt: skip
    return page(request, "contact.html", me, title=found.body.get("email"),
                active="/dashboard/audiences", contact=found.body, emails=emails,
                runs=run_rows, segments=segments.items())  # fmt: skip


@router.get("/segments")
async def segment_list(request: Request, after: str | None = None) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get("/segments", after=after)
    context = context_of(request)
    rows = []
    async with context.database.session() as session:
        for segment in answer.items():
            try:
                size: int | str = await audiences.segment_size(
                    session, me.principal.team_id, segment["id"]
                )
            except ApiError:
                size = "—"
            rows.append([segment.get("name"), size, segment.get("created_at")])
    return page(request, "listing.html", me, title="Segments", active="/dashboard/segments",
                columns=["Segment", "Contacts", "Created"], rows=rows, empty="No segment yet.",
                next_href=next_href(request, answer))  # fmt: skip


@router.get("/templates")
async def template_list(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/templates",
        lambda t: [link(t.get("name"), f"/dashboard/templates/{t['id']}"), t.get("alias"),
                   badge(t.get("status")), t.get("updated_at")],
        after=after, title="Templates", active="/dashboard/templates",
        columns=["Template", "Alias", "Status", "Updated"], empty="No template yet.",
    )  # fmt: skip


@router.get("/templates/{template_id}")
async def template(request: Request, template_id: str) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/templates/{template_id}")
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/templates")
    return page(request, "template.html", me, title=answer.body.get("name"),
                active="/dashboard/templates", template=answer.body)  # fmt: skip


@router.get("/campaigns")
async def campaign_list(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/campaigns",
        lambda c: [link(c.get("name"), f"/dashboard/campaigns/{c['id']}"), c.get("subject"),
                   badge(c.get("status")), "A/B" if c.get("ab_metric") else "",
                   c.get("created_at")],
        after=after, title="Campaigns", active="/dashboard/campaigns",
        columns=["Campaign", "Subject", "Status", "Test", "Created"], empty="No campaign yet.",
    )  # fmt: skip


@router.get("/campaigns/{campaign_id}")
async def campaign(request: Request, campaign_id: str) -> Response:
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/campaigns/{campaign_id}")
        ab = await api.get(f"/campaigns/{campaign_id}/ab") if answer.ok else None
    if not answer.ok:
        return failed(request, me, answer, "/dashboard/campaigns")
    result = ab.body if ab is not None and ab.ok else None
    return page(request, "campaign.html", me, title=answer.body.get("name"),
                active="/dashboard/campaigns", campaign=answer.body, ab=result,
                chart=ab_chart(result) if result else None)  # fmt: skip


@router.get("/automations")
async def automation_list(request: Request, after: str | None = None) -> Response:
    return await listing(
        request, "/automations",
        lambda a: [link(a.get("name"), f"/dashboard/automations/{a['id']}"), a.get("trigger"),
                   badge(a.get("status")), a.get("updated_at")],
        after=after, title="Automations", active="/dashboard/automations",
        columns=["Automation", "Trigger", "Status", "Updated"], empty="No automation yet.",
    )  # fmt: skip


@router.get("/automations/{automation_id}")
async def automation(
    request: Request, automation_id: str, run: str | None = None, status: str | None = None,
    after: str | None = None,
) -> Response:  # fmt: skip
    me = await member(request)
    async with api_as(request, me) as api:
        answer = await api.get(f"/automations/{automation_id}")
        if not answer.ok:
            return failed(request, me, answer, "/dashboard/automations")
        runs = await api.get(f"/automations/{automation_id}/runs", status=status, after=after)
        detail = await api.get(f"/automations/{automation_id}/runs/{run}") if run else None
    path: list[str] = []
    if detail is not None and detail.ok:
        path = [answer.body.get("trigger_key") or ""]
        path += [str(step.get("key")) for step in detail.body.get("steps", [])]
    graph = graph_svg(answer.body.get("steps", []), answer.body.get("connections", []), path)
    return page(request, "automation.html", me, title=answer.body.get("name"),
                active="/dashboard/automations", automation=answer.body, graph=graph,
                runs=runs.items(), run=detail.body if detail and detail.ok else None,
                status=status, next_href=next_href(request, runs))  # fmt: skip
