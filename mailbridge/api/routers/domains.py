"""Sending domains, their verification and claims (the Resend SDK's paths and fields)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.errors import ValidationError
from mailbridge.services import domains
from mailbridge.services.domains import (
    DomainChanges,
    DomainOptions,
    Tls,
    domain_summary_view,
    domain_view,
)
from mailbridge.wire import DomainName, declared

router = APIRouter(tags=["domains"])

# One DNS label, as `normalize_label` takes it (any case: it lower-cases).
Label = Annotated[str, declared(pattern=domains.LABEL_PATTERN)]
Region = Annotated[str, declared(enum=list(domains.REGIONS))]


class Capabilities(BaseModel):
    """Resend's `capabilities`: receiving is ours to switch; a mailbridge domain always
    sends (once verified), so `sending` may only say so."""

    model_config = ConfigDict(extra="forbid")

    sending: Literal["enabled"] | None = None
    receiving: Literal["enabled", "disabled"] | None = None


def _receiving(receiving: bool | None, capabilities: Capabilities | None) -> bool | None:
    if capabilities is None or capabilities.receiving is None:
        return receiving
    wanted = capabilities.receiving == "enabled"
    if receiving is not None and receiving != wanted:
        raise ValidationError("`receiving` and `capabilities.receiving` disagree.")
    return wanted


class CreateDomain(BaseModel):
    name: DomainName = Field(min_length=1, max_length=domains.MAX_DOMAIN_NAME_LENGTH)
    region: Region = domains.REGIONS[0]
    # The two labels must differ (a rule over both, checked by the service).
    custom_return_path: Label = domains.DEFAULT_RETURN_PATH
    tracking_subdomain: Label = domains.DEFAULT_TRACKING_SUBDOMAIN
    open_tracking: StrictBool = False
    click_tracking: StrictBool = False
    receiving: StrictBool | None = None
    capabilities: Capabilities | None = None


class UpdateDomain(BaseModel):
    open_tracking: StrictBool | None = None
    click_tracking: StrictBool | None = None
    tls: Tls | None = None
    tracking_subdomain: Label | None = None
    receiving: StrictBool | None = None
    capabilities: Capabilities | None = None


class ClaimDomain(BaseModel):
    """Resend's claim body; a claimed domain keeps its own settings, so only ``name`` counts."""

    name: DomainName = Field(min_length=1, max_length=domains.MAX_DOMAIN_NAME_LENGTH)


@router.post("/domains", status_code=201)
async def create_domain(
    body: CreateDomain, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    options = DomainOptions(
        region=body.region,
        return_path=body.custom_return_path,
        tracking_subdomain=body.tracking_subdomain,
        open_tracking=body.open_tracking,
        click_tracking=body.click_tracking,
        receiving=bool(_receiving(body.receiving, body.capabilities)),
    )
    domain = await domains.create_domain(
        session, context.clock, context.settings, principal.team_id, body.name, options
    )
    return domain_view(domain, context.settings)


@router.get("/domains")
async def list_domains(principal: Reader, session: SessionDep, page: PageDep) -> dict[str, Any]:
    result = await domains.list_domains(session, principal.team_id, page)
    return list_body(result, domain_summary_view)


@router.post(
    "/domains/claim", responses={201: {"description": "Claim started (200: one under way)"}}
)
async def claim_domain(
    body: ClaimDomain,
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
    response: Response,
) -> dict[str, Any]:
    claim, started = await domains.claim_domain(
        session, context.clock, context.settings, principal.team_id, body.name
    )
    response.status_code = 201 if started else 200
    return await domains.claim_view(session, context.clock, claim)


@router.get("/domains/{domain_id}")
async def get_domain(
    domain_id: str, principal: Reader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    domain = await domains.get_domain(session, principal.team_id, domain_id)
    return domain_view(domain, context.settings)


@router.patch("/domains/{domain_id}")
async def update_domain(
    domain_id: str,
    body: UpdateDomain,
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
) -> dict[str, Any]:
    changes = DomainChanges(
        open_tracking=body.open_tracking,
        click_tracking=body.click_tracking,
        tls=body.tls,
        tracking_subdomain=body.tracking_subdomain,
        receiving=_receiving(body.receiving, body.capabilities),
    )
    domain = await domains.update_domain(
        session, context.clock, context.settings, principal.team_id, domain_id, changes
    )
    return domain_view(domain, context.settings)


@router.delete("/domains/{domain_id}")
async def delete_domain(
    domain_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    domain = await domains.delete_domain(
        session, context.clock, context.settings, principal.team_id, domain_id
    )
    return {"object": "domain", "id": domain.id, "deleted": True}


@router.post("/domains/{domain_id}/verify")
async def verify_domain(
    domain_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    """Checks DNS now and answers the outcome (Resend answers before checking)."""
    domain = await domains.verify_domain(
        session, context.clock, context.settings, principal.team_id, domain_id
    )
    return domain_view(domain, context.settings)


@router.get("/domains/{domain_id}/claim")
async def get_claim(
    domain_id: str, principal: Reader, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    claim = await domains.claim_for_domain(session, principal.team_id, domain_id)
    return await domains.claim_view(session, context.clock, claim)


@router.post("/domains/{domain_id}/claim/verify")
async def verify_claim(
    domain_id: str, principal: Writer, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    claim = await domains.verify_claim(
        session, context.clock, context.settings, principal.team_id, domain_id
    )
    return await domains.claim_view(session, context.clock, claim)
