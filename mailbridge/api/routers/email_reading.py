"""Reading sent email: ``GET /emails``, ``/emails/:id`` and its attachments (spec §4.4).

The filters of the list are described in ``services.email_reading``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from mailbridge.api.bodies import list_body, unpaged_list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep
from mailbridge.services import email as emails
from mailbridge.services.email import EmailFilters, email_summary, email_view
from mailbridge.services.kernel import instance_secret
from mailbridge.wire import declared

router = APIRouter(tags=["emails"])

# What ``EmailFilters.parse`` accepts: a known status; a recipient holding an ``@`` and,
# once stripped, no line break; a tag with a name (before any ``:``) that is not blank.
Status = Annotated[str, declared(enum=sorted(emails.EMAIL_EVENT_TYPES))]
Recipient = Annotated[str, declared(pattern=r"^\s*[^\n]*@[^\n]*\s*$")]
Tag = Annotated[str, declared(pattern=r"^[^:]*[^\s:]")]


def email_filters(
    status: Annotated[Status | None, Query()] = None,
    recipient: Annotated[Recipient | None, Query()] = None,
    created_after: Annotated[str | None, Query()] = None,
    created_before: Annotated[str | None, Query()] = None,
    tag: Annotated[list[Tag] | None, Query()] = None,
) -> EmailFilters:
    return EmailFilters.parse(
        status=status,
        recipient=recipient,
        created_after=created_after,
        created_before=created_before,
        tags=tag or (),
    )


FiltersDep = Annotated[EmailFilters, Depends(email_filters)]


@router.get("/emails")
async def list_emails(
    principal: Reader, session: SessionDep, page: PageDep, filters: FiltersDep
) -> dict[str, Any]:
    result = await emails.list_emails(session, principal.team_id, filters, page)
    return list_body(result, email_summary)


@router.get("/emails/{email_id}")
async def get_email(principal: Reader, email_id: str, session: SessionDep) -> dict[str, Any]:
    email, events = await emails.get_email(session, principal.team_id, email_id)
    return email_view(email, events)


@router.get("/emails/{email_id}/attachments")
async def list_attachments(
    principal: Reader, email_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """Every attachment at once: not paginated (spec §4.4), pagination parameters ignored."""
    infos = await emails.list_attachments(session, principal.team_id, email_id)
    secret = await instance_secret(context.database, context.settings)
    now = context.clock.now()
    base_url = context.settings.public_url
    return unpaged_list_body(
        emails.attachment_view(info, base_url=base_url, secret=secret, now=now) for info in infos
    )


@router.get("/emails/{email_id}/attachments/{attachment_id}")
async def get_attachment(
    principal: Reader, email_id: str, attachment_id: str, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    info = await emails.get_attachment(session, principal.team_id, email_id, attachment_id)
    secret = await instance_secret(context.database, context.settings)
    view = emails.attachment_view(
        info, base_url=context.settings.public_url, secret=secret, now=context.clock.now()
    )
    return {"object": "attachment", **view}
