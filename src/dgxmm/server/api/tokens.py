"""API tokens over HTTP (admins): create one of a role and an expiry, list them, revoke one.

``dgxmm token create`` and ``revoke`` use these; a token is shown once, in the answer that
made it, and the database keeps only its hash. The list never carries a token: a token is
revoked from the list by its id (``POST /api/tokens/{id}/revoke``), or by the token itself
(``POST /api/tokens/revoke``).

A new token's fields are checked together, so a refusal names every wrong one in
``errors``, as a job's or a deployment's does.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.errors import InvalidInput, NotFound
from dgxmm.server.access.tokens import NAME_RULE, Role, is_token_name
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import Admin, HostDep, PathId, TokensDep
from dgxmm.server.edge.openapi import answers
from dgxmm.server.lists.jobs import iso
from dgxmm.time_units import DAY_US

__all__ = ["MAX_EXPIRY_DAYS", "router"]

router = APIRouter(prefix="/api/tokens", tags=["tokens"])

MAX_EXPIRY_DAYS = 3650  # ten years: a longer one is a token that never expires, said plainly


class NewToken(Body):
    """``{role, name?, expires_in_days?}``: admin (everything) or viewer (reads); who it is
    for; the whole days until it expires (1-3650; null or left out: never)."""

    # Checked beside the other fields (400 listing them all), not by pydantic before them.
    role: str | None = Field(
        default=None, max_length=100, json_schema_extra={"enum": [r.value for r in Role]}
    )
    name: str | None = Field(default=None, max_length=10_000)
    expires_in_days: int | None = None


class TokenBody(Body):
    """``{token}``: the token to revoke."""

    token: str = Field(min_length=1, max_length=200)


@router.get("", responses=answers())
def list_tokens(tokens: TokensDep, host: HostDep, _: Admin) -> dict[str, Any]:
    """Every token, newest first: id, name, role, state (live, expired, revoked), times."""
    now = host.clock.now_us()
    return {
        "tokens": [
            {
                "id": record.id,
                "name": record.name,
                "role": record.role.value,
                "state": record.state(now).value,
                "created_at": iso(record.created_at, host),
                "expires_at": iso(record.expires_at, host),
                "revoked_at": iso(record.revoked_at, host),
            }
            for record in tokens.list()
        ]
    }


@router.post("", responses=answers(400))
def create(body: NewToken, tokens: TokensDep, host: HostDep, _: Admin) -> dict[str, Any]:
    """Create a token and answer it (it is shown only this once), with when it expires."""
    role, name, days = _checked(body)
    expires_at = None if days is None else host.clock.now_us() + days * DAY_US
    token = tokens.create(role, name, expires_at=expires_at)
    return {"token": token, "role": role, "name": name, "expires_at": iso(expires_at, host)}


@router.post("/revoke", responses=answers(404))
def revoke(body: TokenBody, tokens: TokensDep, _: Admin) -> dict[str, Any]:
    """Revoke a token: from now on it opens nothing; 404 for one that is not live."""
    if not tokens.revoke(body.token.strip()):
        raise NotFound("live token", "(as given)")
    return {"revoked": True}


@router.post("/{token_id}/revoke", responses=answers(404))
def revoke_by_id(token_id: PathId, tokens: TokensDep, _: Admin) -> dict[str, Any]:
    """Revoke the token of the list's ``id``; 404 for none, or one revoked or expired."""
    if not tokens.revoke_id(token_id):
        raise NotFound("live token", str(token_id))
    return {"revoked": True, "id": token_id}


def _checked(body: NewToken) -> tuple[Role, str, int | None]:
    """Return the role, the name and the days, or refuse naming every wrong field."""
    wrong: list[tuple[str, str]] = []
    role: Role | None = None
    if body.role is None:
        wrong.append(("role", "role is required: admin or viewer"))
    else:
        try:
            role = Role(body.role)
        except ValueError:
            wrong.append(("role", f"{body.role[:40]!r} is not a role (admin or viewer)"))
    name = body.name if body.name is not None else (role.value if role else "")
    if body.name is not None and not is_token_name(body.name):
        wrong.append(("name", NAME_RULE))
    days = body.expires_in_days
    if days is not None and not 1 <= days <= MAX_EXPIRY_DAYS:
        wrong.append(
            ("expires_in_days", f"{days} is not a whole number of days from 1 to {MAX_EXPIRY_DAYS}")
        )
    if wrong:
        raise InvalidInput.every(wrong)
    assert role is not None
    return role, name, days
