"""How errors become HTTP answers: one JSON shape, ``{"error", "field", "message"}``.

Domain code raises ``dgxmm.errors``; this is the only place that knows their status codes.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from dgxmm.errors import (
    BackendError,
    BackupError,
    Busy,
    Conflict,
    DgxmmError,
    Forbidden,
    InvalidInput,
    NotAllowed,
    NotFound,
    StoreError,
)

__all__ = ["error_body", "install_error_handlers"]

log = logging.getLogger(__name__)

_STATUS: list[tuple[type[DgxmmError], int, str]] = [
    (InvalidInput, 400, "invalid"),
    (NotFound, 404, "not_found"),
    (Busy, 409, "busy"),
    (Conflict, 409, "conflict"),
    (Forbidden, 403, "forbidden"),
    (NotAllowed, 403, "not_allowed"),
    (BackupError, 422, "backup"),
    (BackendError, 502, "backend"),
    (StoreError, 500, "store"),
]


def error_body(error: str, message: str, field: str | None = None) -> dict[str, Any]:
    """Return the one error shape of the API."""
    return {"error": error, "field": field, "message": message}


def _domain_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DgxmmError)
    for kind, status, name in _STATUS:
        if isinstance(exc, kind):
            field, message = None, str(exc)
            if isinstance(exc, InvalidInput | Conflict):  # the errors that name their field
                field, message = exc.field, exc.message
            return JSONResponse(error_body(name, message, field), status_code=status)
    log.error("unmapped error %r", exc)
    return JSONResponse(error_body("error", str(exc)), status_code=500)


def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    location = [
        str(part)
        for part in first.get("loc", ())
        if part not in ("body", "query", "path", "header")
    ]
    field = ".".join(location) or None
    kind = first.get("type", "")
    in_body = tuple(first.get("loc", ()))[:1] == ("body",)
    if kind == "enum" and in_body and isinstance(first.get("input"), str):
        # A text outside an enum is refused like the engine refuses one: 400 naming the
        # field and the allowed values, which /openapi.json lists too.
        context = first.get("ctx")
        allowed = context.get("expected") if isinstance(context, dict) else None
        message = f"{field}: {first.get('input')!r} is not one of {allowed}"
        return JSONResponse(error_body("invalid", message, field), status_code=400)
    if kind == "json_invalid":
        context = first.get("ctx")
        reason = context.get("error") if isinstance(context, dict) else None
        message = f"the body is not valid JSON: {reason or first['msg']}"
        field = "body"
    elif kind == "missing":
        message = f"{field} is required"
    elif kind == "extra_forbidden":
        message = f"{field} is not a known field"
    else:
        message = f"{field}: {first['msg']}" if field else str(first["msg"])
    return JSONResponse(error_body("invalid_request", message, field), status_code=422)


def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    names = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}
    return JSONResponse(
        error_body(names.get(exc.status_code, "error"), str(exc.detail)),
        status_code=exc.status_code,
        headers=exc.headers,
    )


def install_error_handlers(app: FastAPI) -> None:
    """Map domain errors, validation errors and HTTP errors to the API's error shape."""
    app.add_exception_handler(DgxmmError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
