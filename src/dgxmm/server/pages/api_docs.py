"""``/api/docs``: the OpenAPI document as a plain page, with no script or font from elsewhere.

FastAPI's Swagger UI loads its script and styles from a CDN, so on a machine without that
network (most GPU machines in a data centre) it was a blank page. This page is rendered on
the server from the same document ``/openapi.json`` serves: every operation with its
parameters, its request body's fields (types, allowed values, which are required) and its
answers.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.pages.render import templates

__all__ = ["operations", "router"]

router = APIRouter(include_in_schema=False)

_METHODS = ("get", "post", "put", "patch", "delete")


@router.get("/api/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> Response:
    """The API's operations, read from its OpenAPI document."""
    document = request.app.openapi()
    return templates.TemplateResponse(
        request,
        "api_docs.html",
        {
            "info": document.get("info", {}),
            "operations": operations(document),
            "who": None,
            "page": "api_docs",
        },
    )


def operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Return every operation of an OpenAPI document, by path and method, ready to show."""
    schemas = document.get("components", {}).get("schemas", {})
    found: list[dict[str, Any]] = []
    for path, item in sorted(document.get("paths", {}).items()):
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            found.append(
                {
                    "id": f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", ""),
                    "method": method.upper(),
                    "path": path,
                    "summary": operation.get("summary", ""),
                    "description": operation.get("description", ""),
                    "tags": operation.get("tags", []),
                    "parameters": [
                        {
                            "name": p.get("name"),
                            "in": p.get("in"),
                            "required": bool(p.get("required")),
                            "type": _type(p.get("schema", {}), schemas),
                        }
                        for p in operation.get("parameters", [])
                    ],
                    "body": _body(operation.get("requestBody"), schemas),
                    "responses": sorted(operation.get("responses", {})),
                }
            )
    return found


def _body(request_body: dict[str, Any] | None, schemas: dict[str, Any]) -> dict[str, Any] | None:
    if not request_body:
        return None
    content: dict[str, dict[str, Any]] = request_body.get("content", {})
    first: dict[str, Any] = next(iter(content.values()), {})
    schema: dict[str, Any] = first.get("schema", {})
    resolved = _resolve(schema, schemas)
    required = set(resolved.get("required", []))
    return {
        "name": schema.get("$ref", "").rsplit("/", 1)[-1] or _type(schema, schemas),
        "fields": [
            {"name": name, "type": _type(field, schemas), "required": name in required}
            for name, field in resolved.get("properties", {}).items()
        ],
    }


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        resolved: dict[str, Any] = schemas.get(ref.rsplit("/", 1)[-1], {})
        return resolved
    return schema


def _type(schema: dict[str, Any], schemas: dict[str, Any], depth: int = 0) -> str:
    """Describe a schema in a few words: ``integer``, ``string (one of a, b)``, ``array of``..."""
    if depth > 4:
        return "…"
    schema = _resolve(schema, schemas)
    if "enum" in schema:
        return "one of " + ", ".join(str(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(s, schemas, depth + 1) for s in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return "array of " + _type(schema.get("items", {}), schemas, depth + 1)
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        return "object of " + (
            _type(extra, schemas, depth + 1) if isinstance(extra, dict) else "any"
        )
    if kind is None:
        return "any"
    return str(kind)
