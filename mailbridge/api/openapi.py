"""The OpenAPI document, told whole: bodies read by hand, and links between operations.

Some routes read their JSON body themselves (after authorization, or because the spec
takes either an array or an object); FastAPI cannot see those bodies, so each such route
names its model with :func:`json_body` and the model lands in the document as if the
route had declared it. Every route that creates something (a POST answering an object
with an ``id``) gets OpenAPI links to the operations under ``/{that path}/{id}``, which
is what generated clients and schemathesis's stateful phase follow.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import TypeAdapter

COMPONENTS = "#/components/schemas/{model}"
_components: dict[str, dict[str, Any]] = {}


def _schema(shape: Any) -> dict[str, Any]:
    schema = TypeAdapter(shape).json_schema(ref_template=COMPONENTS, mode="validation")
    _components.update(schema.pop("$defs", {}))
    title = schema.get("title")
    if isinstance(shape, type) and isinstance(title, str) and schema.get("type") == "object":
        _components[title] = schema
        return {"$ref": COMPONENTS.format(model=title)}
    return schema


def json_body(*shapes: Any) -> dict[str, Any]:
    """``openapi_extra`` for a route reading its own JSON body: one of ``shapes``."""
    schemas = [_schema(shape) for shape in shapes]
    schema = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _success_code(operation: dict[str, Any]) -> str | None:
    codes = sorted(code for code in operation.get("responses", {}) if code.startswith("2"))
    return codes[0] if codes else None


def _path_params(operation: dict[str, Any]) -> set[str]:
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}


def _add_links(paths: dict[str, dict[str, Any]]) -> None:
    """POST /things → every operation on /things/{thing_id}[/...] gets the new ``id``."""
    for path, item in paths.items():
        create = item.get("post")
        code = _success_code(create) if create else None
        if create is None or code is None:
            continue
        known = _path_params(create)
        links: dict[str, Any] = {}
        for other, other_item in paths.items():
            rest = other[len(path) :]
            if not rest.startswith("/{") or rest.count("{") > 1:
                continue  # only the id the create answered, one level down
            new_param = rest[2 : rest.index("}")]
            for method, operation in other_item.items():
                params = {new_param: "$response.body#/id"}
                for name in _path_params(operation) - {new_param}:
                    if name not in known:
                        break
                    params[name] = f"$request.path.{name}"
                else:
                    link = re.sub(r"[^A-Za-z0-9]+", "_", f"{method} {other}").strip("_")
                    links[link] = {"operationId": operation["operationId"], "parameters": params}
        if links:  # a copy: the generator shares one response object between operations
            create["responses"][code] = {**create["responses"][code], "links": links}


# Path parameters that name a row by its id: a UUID, or a number for webhooks. The others
# (``id_or_email``, ``contact_ref``, ``step_id`` which takes a step's key too) stay strings.
UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
NUMBER_PATTERN = "^[0-9]{1,18}$"
ID_PATTERNS = {"webhook_id": NUMBER_PATTERN, "step_id": None}


def _declare_ids(paths: dict[str, dict[str, Any]]) -> None:
    for item in paths.values():
        for operation in item.values():
            for param in operation.get("parameters", []):
                name = param["name"]
                if param["in"] != "path" or not name.endswith("_id"):
                    continue
                pattern = ID_PATTERNS.get(name, UUID_PATTERN)
                if pattern is not None:
                    param["schema"] = {**param["schema"], "pattern": pattern}


def _mark_lists(paths: dict[str, dict[str, Any]]) -> None:
    """``x-paginated: cursor`` on every list paged by ``after``/``before`` (spec §8.3)."""
    for item in paths.values():
        for operation in item.values():
            if any(p["name"] == "after" for p in operation.get("parameters", [])):
                operation["x-paginated"] = "cursor"


def install(app: FastAPI) -> None:
    """Replace ``app.openapi`` with the whole document (built once, then cached)."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, routes=app.routes)
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in _components.items():
                schemas.setdefault(name, schema)
            _declare_ids(document.get("paths", {}))
            _mark_lists(document.get("paths", {}))
            _add_links(document.get("paths", {}))
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = build  # type: ignore[method-assign]
