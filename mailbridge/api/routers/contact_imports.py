"""Contact imports: a CSV file uploaded as ``multipart/form-data`` (Resend's SDKs send
``file``, and ``column_map``, ``segments``, ``topics`` as JSON text, ``on_conflict``),
written by a runner a chunk at a time; its progress and row errors read back by id.

Included before ``contacts``: ``/contacts/imports`` is not a contact's email.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Query, UploadFile

from mailbridge.api.bodies import list_body
from mailbridge.api.deps import ContextDep, PageDep, Reader, SessionDep, Writer
from mailbridge.services import audiences
from mailbridge.services.audiences import ImportOptions, import_view

router = APIRouter(tags=["contacts"])

FormText = Annotated[str | None, Form()]
JsonText = Annotated[str | None, Form(description="JSON text (multipart fields are text)")]


@router.post("/contacts/imports", status_code=201)
async def create_contact_import(
    file: Annotated[
        UploadFile, File(description="a UTF-8 CSV file, its first line naming the columns")
    ],
    principal: Writer,
    session: SessionDep,
    context: ContextDep,
    column_map: JsonText = None,
    on_conflict: Annotated[Literal["upsert", "skip"] | None, Form()] = None,
    segments: JsonText = None,
    topics: JsonText = None,
    audience_id: FormText = None,
) -> dict[str, Any]:
    options = ImportOptions.parse(column_map, on_conflict, segments, topics)
    audience = await audiences.resolve_audience(
        session, context.clock, principal.team_id, audience_id or None
    )
    data = await file.read(audiences.MAX_IMPORT_BYTES + 1)
    job = await audiences.create_import(
        session, context.clock, principal.team_id, audience, data, options
    )
    return {"object": "contact_import", "id": job.id}


@router.get("/contacts/imports")
async def list_contact_imports(
    principal: Reader,
    session: SessionDep,
    page: PageDep,
    status: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    result = await audiences.list_imports(session, principal.team_id, status, page)
    return list_body(result, import_view)


@router.get("/contacts/imports/{import_id}")
async def get_contact_import(
    import_id: str, principal: Reader, session: SessionDep
) -> dict[str, Any]:
    return import_view(await audiences.get_import(session, principal.team_id, import_id))
