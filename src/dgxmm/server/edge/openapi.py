"""The statuses each operation answers, in the OpenAPI document, each with its body's schema.

Two sources, so that the document says every status a route gives:

- what a route's construction implies, added to every operation here (``OpenApiApp``): a
  ``Viewer`` answers 401 without a valid token, an ``Admin`` 401 and 403 (a viewer's token);
  parameters answer 422 (a wrong type or range); a body 422 (malformed, or not JSON); every
  write (POST, PUT, PATCH, DELETE), one that takes no body too, 413: ``body_limit.py``
  refuses a body past ``MAX_BODY_BYTES`` before any route is chosen;
  a query parameter that is an enum answers 400 to a text outside it;
- what its domain code raises, which no signature shows, declared on the route with
  ``answers(400, 404, 409, ...)`` (``responses.py`` maps the errors to these statuses).

Every refusal has the one error shape, ``ErrorBody``; FastAPI's own 422 schema (``detail``)
is not what this API sends, so it is replaced. ``tests/server/test_openapi_statuses.py``
walks the routes and sends real requests, and fails on a status the document leaves out.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Any, get_args

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel

from dgxmm.server.edge.deps import require_admin, require_viewer

__all__ = ["DESCRIPTIONS", "ErrorBody", "FieldError", "OpenApiApp", "answers", "implied_statuses"]

DESCRIPTIONS = {
    400: "A refused value: the field and why (a definition, an enum text, a range).",
    401: "No valid token (Authorization: Bearer <token>, or the login cookie).",
    403: "A viewer's token where an admin's is needed, or an action the rules forbid.",
    404: "Nothing has that id or name.",
    409: "Busy (work under way; try again), or a conflict: a name taken, a state, a fit.",
    413: "The body is larger than 1 MiB.",
    422: "The request does not parse: a wrong type, an unknown field, a body that is not JSON.",
    502: "The model server failed or is gone.",
}
_SCHEMA_REF = "#/components/schemas/ErrorBody"
# The methods a client may send a body with; body_limit.py answers 413 to one past the limit
# whatever the route then does with it.
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class FieldError(BaseModel):
    """One wrong field of a refusal that checked them all."""

    field: str | None
    message: str


class ErrorBody(BaseModel):
    """The one error shape of the API (``responses.py``)."""

    error: str
    field: str | None
    message: str
    errors: list[FieldError] | None = None


def answers(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Return a route's ``responses=`` for the statuses its domain code answers."""
    return {s: {"model": ErrorBody, "description": DESCRIPTIONS[s]} for s in statuses}


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for dependency in dependant.dependencies:
        yield dependency
        yield from _dependencies(dependency)


def implied_statuses(dependant: Dependant, *, takes_body: bool, method: str) -> set[int]:
    """Return the statuses a route's method, dependencies and parameters answer by themselves."""
    calls = {dependency.call for dependency in _dependencies(dependant)}
    implied: set[int] = set()
    if require_viewer in calls:
        implied.add(401)
    if require_admin in calls:
        implied |= {401, 403}
    if method.upper() in _WRITES:
        implied.add(413)
    if takes_body:
        implied |= {413, 422}
    parameters = (dependant, *_dependencies(dependant))
    if any(d.path_params or d.query_params or d.header_params for d in parameters):
        implied.add(422)
    if any(_is_enum(q.field_info.annotation) for d in parameters for q in d.query_params):
        implied.add(400)  # a text outside a query's enum names the field (responses.py)
    return implied


def _is_enum(annotation: Any) -> bool:
    """Whether a parameter's type is an enum, or one inside a union or a list."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return True
    return any(_is_enum(inner) for inner in get_args(annotation))


def _response(status: int) -> dict[str, Any]:
    return {
        "description": DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": _SCHEMA_REF}}},
    }


class OpenApiApp(FastAPI):
    """The app, whose OpenAPI document lists every status each operation answers."""

    def openapi(self) -> dict[str, Any]:
        """Return the document, built once: FastAPI's, with the implied statuses added."""
        if self.openapi_schema is not None:
            return self.openapi_schema
        document = get_openapi(
            title=self.title,
            version=self.version,
            description=self.description,
            routes=self.routes,
        )
        for context in iter_route_contexts(self.routes):
            if not isinstance(context.original_route, APIRoute) or not context.include_in_schema:
                continue
            for method in context.methods or ():
                implied = implied_statuses(
                    context.dependant, takes_body=context.body_field is not None, method=method
                )
                operation = document["paths"][context.path_format][method.lower()]
                responses = operation["responses"]
                for status in implied:
                    responses.setdefault(str(status), _response(status))
                if "422" in responses:  # FastAPI's own schema for it is not what we send
                    responses["422"] = _response(422)
                operation["responses"] = dict(sorted(responses.items()))
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        for model in (ErrorBody, FieldError):
            schemas[model.__name__] = model.model_json_schema(
                ref_template="#/components/schemas/{model}"
            )
        schemas["ErrorBody"].pop("$defs", None)
        self.openapi_schema = document
        return document
