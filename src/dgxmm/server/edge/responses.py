"""How errors become HTTP answers: one JSON shape, ``{"error", "field", "message"}``.

A refusal that checked every field (a job definition; a body pydantic refused) adds
``"errors": [{"field", "message"}, ...]``, all the wrong fields, the first as above.

Domain code raises ``dgxmm.errors``; this is the only place that knows their status codes.
A browser asking for a page (not under ``/api/``, ``Accept: text/html``) gets the same
status and message as an HTML page instead (``templates/error.html``), drawn by the page
the app hands ``install_error_handlers`` (the pages sit above the edge: it never imports them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
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

__all__ = ["ErrorPage", "error_body", "install_error_handlers"]

# Draws the error page a browser gets: (request, status, message, headers) -> the answer.
ErrorPage = Callable[[Request, int, str, Mapping[str, str] | None], Response]

log = logging.getLogger(__name__)

# What FastAPI says when its parser failed on a body in a way it does not map itself.
_PARSE_FAILED = "There was an error parsing the body"

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


def _wants_page(request: Request) -> bool:
    path = request.url.path
    if path.startswith(("/api/", "/static/")) or path == "/openapi.json":
        return False
    return "text/html" in request.headers.get("accept", "")


def _answer(
    request: Request,
    body: dict[str, Any],
    status: int,
    headers: Mapping[str, str] | None = None,
) -> Response:
    if _wants_page(request) and status != 401:
        page: ErrorPage = request.app.state.error_page
        return page(request, status, body["message"], headers)
    return JSONResponse(body, status_code=status, headers=headers)


def _domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DgxmmError)
    for kind, status, name in _STATUS:
        if isinstance(exc, kind):
            field, message = None, str(exc)
            if isinstance(exc, InvalidInput | Conflict):  # the errors that name their field
                field, message = exc.field, exc.message
            body = error_body(name, message, field)
            if isinstance(exc, InvalidInput) and exc.errors:  # a check that went on past one
                body["errors"] = [{"field": f, "message": m} for f, m in exc.errors]
            return _answer(request, body, status)
    log.error("unmapped error %r", exc)
    return _answer(request, error_body("error", str(exc)), 500)


def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    read = [_read_validation(error) for error in exc.errors()] or [(False, None, "invalid request")]
    # The first decides the answer's kind and status, as when only one was named.
    enum_text, field, message = read[0]
    body = error_body("invalid" if enum_text else "invalid_request", message, field)
    if len(read) > 1:
        body["errors"] = [{"field": f, "message": m} for _, f, m in read]
    return _answer(request, body, 400 if enum_text else 422)


def _read_validation(error: Mapping[str, Any]) -> tuple[bool, str | None, str]:
    """Return (a text outside an enum, the field, the message) of one pydantic error."""
    location = [
        str(part)
        for part in error.get("loc", ())
        if part not in ("body", "query", "path", "header")
    ]
    kind = error.get("type", "")
    in_body = tuple(error.get("loc", ()))[:1] == ("body",)
    in_query = tuple(error.get("loc", ()))[:1] == ("query",)
    # An error of the body as a whole (missing, too deep) names the body.
    field = ".".join(location) or ("body" if in_body else None)
    context = error.get("ctx")
    if kind == "enum" and (in_body or in_query) and isinstance(error.get("input"), str):
        # A text outside an enum (in the body, or a list's filter in the query) is refused
        # like the engine refuses one: 400 naming the field and the allowed values, which
        # /openapi.json lists too.
        allowed = context.get("expected") if isinstance(context, dict) else None
        return True, field, f"{field}: {error.get('input')!r} is not one of {allowed}"
    if kind == "json_invalid":
        reason = context.get("error") if isinstance(context, dict) else None
        return False, "body", f"the body is not valid JSON: {reason or error['msg']}"
    if kind == "missing":
        return False, field, f"{field} is required"
    if kind == "extra_forbidden":
        return False, field, f"{field} is not a known field"
    return False, field, f"{field}: {error['msg']}" if field else str(error["msg"])


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    unreadable = _unreadable_body(exc)
    if unreadable is not None:
        return _answer(request, error_body("invalid_request", unreadable, "body"), 422)
    names = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found" and _wants_page(request):
        message = f"there is no page {request.url.path}"
    return _answer(
        request,
        error_body(names.get(exc.status_code, "error"), message),
        exc.status_code,
        exc.headers,
    )


def _unreadable_body(exc: HTTPException) -> str | None:
    """Return why a body could not be read as JSON, when that is what ``exc`` says.

    FastAPI turns only a ``JSONDecodeError`` into a validation error; any other failure to
    parse a body (not UTF-8, nested past the parser's depth, a number past Python's 4300
    digits, whatever a parser raises next) becomes its bare 400 "There was an error parsing
    the body", with the parser's error as the cause. Each is a malformed body, answered
    like one, on every route at once: the cause only words the message.
    """
    if exc.status_code != 400 or exc.__cause__ is None or exc.detail != _PARSE_FAILED:
        return None
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        return "the body is not valid JSON: it is not UTF-8 text"
    if isinstance(cause, RecursionError):
        return "the body is not valid JSON: it is nested too deep"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return "the body is not valid JSON: a number in it has too many digits"
    return f"the body is not valid JSON: it could not be parsed ({type(cause).__name__})"


def install_error_handlers(app: FastAPI, page: ErrorPage) -> None:
    """Map domain errors, validation errors and HTTP errors to the API's error shape, or to
    ``page`` for a browser that asked for a page."""
    app.state.error_page = page
    app.add_exception_handler(DgxmmError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
