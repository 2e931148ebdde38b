"""API tokens over HTTP (admins): create one of a role, revoke one.

``dgxmm token create`` and ``revoke`` use these; a token is shown once, in the answer that
made it, and the database keeps only its hash.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.errors import NotFound
from dgxmm.server.auth import Role
from dgxmm.server.bodies import Body
from dgxmm.server.deps import Admin, TokensDep
from dgxmm.server.openapi import answers

__all__ = ["router"]

router = APIRouter(prefix="/api/tokens", tags=["tokens"])


class NewToken(Body):
    """``{role, name?}``: admin (everything) or viewer (reads); who it is for."""

    role: Role = Field(strict=False)
    name: str | None = Field(default=None, max_length=200)


class TokenBody(Body):
    """``{token}``: the token to revoke."""

    token: str = Field(min_length=1, max_length=200)


@router.post("", responses=answers(400))
def create(body: NewToken, tokens: TokensDep, _: Admin) -> dict[str, Any]:
    """Create a token and answer it (it is shown only this once)."""
    return {"token": tokens.create(body.role, body.name or body.role.value), "role": body.role}


@router.post("/revoke", responses=answers(404))
def revoke(body: TokenBody, tokens: TokensDep, _: Admin) -> dict[str, Any]:
    """Revoke a token: from now on it opens nothing; 404 for one that is not live."""
    if not tokens.revoke(body.token.strip()):
        raise NotFound("live token", "(as given)")
    return {"revoked": True}
