"""The suppression list (Resend's ``/suppressions``, as its SDK calls it)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import suppressions
from mailbridge.services.suppressions import (
    MAX_SUPPRESSION_BATCH_SIZE as MAX_SUPPRESSION_BATCH_SIZE,
)
from mailbridge.services.suppressions import suppression_summary, suppression_view
from mailbridge.wire import EmailAddress, declared

router = APIRouter(tags=["suppressions"])


# What `reason_of` takes: Resend's origins, or the reasons they are stored as.
ORIGINS: list[JsonValue] = ["bounce", "complaint", "manual", "bounced", "complained"]
# The service reads `origin or reason or "manual"`: an empty `origin` defers to `reason`.
Origin = Annotated[str, declared(enum=[*ORIGINS, ""])]


def _null(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _only(given: str, other: str) -> dict[str, Any]:
    """``given`` is a list; ``other`` is left out or null."""
    return {
        "required": [given],
        "properties": {given: {"type": "array"}, other: {"type": "null"}},
    }


class AddSuppression(BaseModel):
    # `reason` counts only when `origin` is left out, null or empty.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["origin"], "properties": {"origin": {"enum": ORIGINS}}},
                {"properties": {"reason": _null({"enum": [*ORIGINS, ""]})}},
            ]
        }
    )

    email: EmailAddress = Field(max_length=320)
    # `origin` in Resend's words; `reason` in ours. Either: bounce, complaint or manual.
    origin: Origin | None = None
    reason: str | None = None


class AddSuppressions(BaseModel):
    emails: list[EmailAddress] = Field(min_length=1, max_length=MAX_SUPPRESSION_BATCH_SIZE)


class RemoveSuppressions(BaseModel):
    # Exactly one of `emails` and `ids` (`_one_of` below).
    model_config = ConfigDict(
        json_schema_extra={"oneOf": [_only("emails", "ids"), _only("ids", "emails")]}
    )

    emails: list[str] | None = Field(
        default=None, min_length=1, max_length=MAX_SUPPRESSION_BATCH_SIZE
    )
    ids: list[str] | None = Field(default=None, min_length=1, max_length=MAX_SUPPRESSION_BATCH_SIZE)

    @model_validator(mode="after")
    def _one_of(self) -> RemoveSuppressions:
        if (self.emails is None) == (self.ids is None):
            raise ValueError("give either `emails` or `ids`")
        return self


@router.get("/suppressions")
async def list_suppressions(
    principal: Reader,
    session: SessionDep,
    page: PageDep,
    origin: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    result = await suppressions.list_suppressions(session, principal.team_id, origin, page)
    return list_body(result, suppression_summary)


@router.post(
    "/suppressions",
    responses={201: {"description": "Added (200: the address was on the list already)"}},
)
async def add_suppression(
    principal: Writer, body: AddSuppression, session: SessionDep, context: ContextDep
) -> JSONResponse:
    """201 with a new entry; 200 with the existing one when the address was already there."""
    entry, created = await suppressions.add_suppression(
        session, context.clock, principal.team_id, body.email,
        body.origin or body.reason or "manual",
    )  # fmt: skip
    return JSONResponse(suppression_view(entry), status_code=201 if created else 200)


@router.post("/suppressions/batch/add", status_code=201)
async def add_suppressions(
    principal: Writer, body: AddSuppressions, session: SessionDep, context: ContextDep
) -> dict[str, Any]:
    entries = await suppressions.add_suppressions(
        session, context.clock, principal.team_id, body.emails
    )
    return {"data": [{"object": "suppression", "id": entry.id} for entry in entries]}


@router.post("/suppressions/batch/remove")
async def remove_suppressions(
    principal: Writer, body: RemoveSuppressions, session: SessionDep
) -> dict[str, Any]:
    names = body.emails if body.emails is not None else body.ids or []
    removed = await suppressions.remove_suppressions(session, principal.team_id, names)
    return {"data": [{"object": "suppression", "id": e.id, "deleted": True} for e in removed]}


@router.get("/suppressions/{id_or_email}")
async def get_suppression(
    principal: Reader, id_or_email: str, session: SessionDep
) -> dict[str, Any]:
    entry = await suppressions.find_suppression(session, principal.team_id, id_or_email)
    return suppression_view(entry)


@router.delete("/suppressions/{id_or_email}")
async def remove_suppression(
    principal: Writer, id_or_email: str, session: SessionDep
) -> dict[str, Any]:
    entry = await suppressions.remove_suppression(session, principal.team_id, id_or_email)
    return {"object": "suppression", "id": entry.id, "deleted": True}
