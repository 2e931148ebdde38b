"""Request dependencies: the host, and who is asking (bearer token or login cookie)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request

from dgxmm.server.auth import Identity, Tokens
from dgxmm.server.host import Host

__all__ = [
    "COOKIE",
    "MAX_ID",
    "Admin",
    "HostDep",
    "PathId",
    "QueryId",
    "QueryInstant",
    "Viewer",
    "identify",
    "require_admin",
    "require_viewer",
]

COOKIE = "dgxmm_token"
# Row ids are 64-bit: a larger number can name nothing, and the databases refuse it loudly.
MAX_ID = 2**63 - 1
PathId = Annotated[int, Path(ge=1, le=MAX_ID)]
QueryId = Annotated[int | None, Query(ge=1, le=MAX_ID)]
# Instants (microseconds since the epoch) that dates can show: year 1 to year 9999.
QueryInstant = Annotated[int | None, Query(ge=-62_135_596_800_000_000, le=253_402_300_799_999_999)]


def get_host(request: Request) -> Host:
    """Return the app's host."""
    host: Host = request.app.state.host
    return host


def identify(request: Request) -> Identity | None:
    """Return who sent the request, or None without a valid token."""
    tokens: Tokens = request.app.state.tokens
    header = request.headers.get("authorization", "")
    scheme, _, credential = header.partition(" ")
    if scheme.lower() == "bearer" and credential:
        return tokens.identify(credential.strip())
    cookie = request.cookies.get(COOKIE)
    if cookie:
        if request.method not in ("GET", "HEAD") and not _same_origin(request):
            return None  # a cookie only counts for writes that come from our own pages
        return tokens.identify(cookie)
    return None


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return request.headers.get("sec-fetch-site") in (None, "same-origin")
    return origin.split("://", 1)[-1] == request.headers.get("host")


def require_viewer(request: Request) -> Identity:
    """Any valid token: reads."""
    identity = identify(request)
    if identity is None:
        raise HTTPException(
            401,
            "a valid token is required (Authorization: Bearer <token>)",
            {"WWW-Authenticate": "Bearer"},
        )
    return identity


def require_admin(identity: Annotated[Identity, Depends(require_viewer)]) -> Identity:
    """An admin token: writes."""
    if not identity.is_admin:
        raise HTTPException(403, "this needs an admin token; yours is a viewer's (reads only)")
    return identity


HostDep = Annotated[Host, Depends(get_host)]
Viewer = Annotated[Identity, Depends(require_viewer)]
Admin = Annotated[Identity, Depends(require_admin)]
