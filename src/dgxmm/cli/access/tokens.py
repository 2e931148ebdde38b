"""``dgxmm token``: create a token, list them, revoke one by its id.

A token is shown once, by ``create``; the database keeps only its hash. ``list`` shows each
token's id, name, role and state, never the token, and ``revoke ID`` takes the list's id, so
the secret never goes on a command line (where the shell's history and ``ps`` would keep
it). ``--offline`` works on the database itself, for a server that is not running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from dgxmm.cli.common import Answer, Target, command, local_time, table
from dgxmm.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from dgxmm.store import Store

__all__ = ["app"]

app = typer.Typer(help="API tokens.", no_args_is_help=True)


@command(app, "create")
def token_create(
    where: Target,
    role: Annotated[str, typer.Option("--role", help="admin (everything) or viewer (reads).")] = (
        "viewer"
    ),
    name: Annotated[str | None, typer.Option("--name", help="Who it is for.")] = None,
    expires_in_days: Annotated[
        int | None,
        typer.Option("--expires-in-days", help="Whole days until it expires (default: never)."),
    ] = None,
) -> Answer:
    """Create a token and print it (it is shown only this once)."""
    from dgxmm.server.access.tokens import Role, Tokens
    from dgxmm.server.api.tokens import MAX_EXPIRY_DAYS
    from dgxmm.time_units import DAY_US

    chosen = Role.named(role)  # refuses a role that is not admin or viewer
    if expires_in_days is not None and not 1 <= expires_in_days <= MAX_EXPIRY_DAYS:
        raise InvalidInput(
            "expires_in_days",
            f"{expires_in_days} is not a whole number of days from 1 to {MAX_EXPIRY_DAYS}",
        )
    if where.offline:
        with where.store() as store:
            expires = (
                None if expires_in_days is None else store.clock.now_us() + expires_in_days * DAY_US
            )
            created = Tokens(store.engine, store.clock).create(
                chosen, name or chosen.value, expires_at=expires
            )
    else:
        with where.client() as api:
            body = {"role": chosen.value, "name": name, "expires_in_days": expires_in_days}
            created = api.post("/api/tokens", body)["token"]
    return Answer(value={"token": created, "role": chosen.value}, text=created)


@command(app, "list")
def token_list(where: Target) -> Answer:
    """List the tokens, newest first: id, name, role, state, times (never the token)."""
    if where.offline:
        with where.store() as store:
            rows = _offline_list(store)
    else:
        with where.client() as api:
            rows = api.get("/api/tokens")["tokens"]
    lines = [
        (t["id"], t["name"], t["role"], t["state"], local_time(t["created_at"]),
         local_time(t["expires_at"]) if t["expires_at"] else "never",
         local_time(t["revoked_at"]))
        for t in rows
    ]  # fmt: skip
    headers = ("ID", "NAME", "ROLE", "STATE", "CREATED", "EXPIRES", "REVOKED")
    return Answer(value={"tokens": rows}, text=table(headers, lines, "no tokens"))


@command(app, "revoke")
def token_revoke(
    where: Target,
    token_id: Annotated[int, typer.Argument(help="The token's id, as `dgxmm token list` shows.")],
) -> Answer:
    """Revoke a token by its id: from now on it opens nothing."""
    from dgxmm.server.access.tokens import Tokens

    if where.offline:
        with where.store() as store:
            if not Tokens(store.engine, store.clock).revoke_id(token_id):
                raise NotFound("live token", str(token_id))
    else:
        with where.client() as api:
            api.post(f"/api/tokens/{token_id}/revoke", {})
    return Answer(value={"revoked": True, "id": token_id}, text=f"revoked token {token_id}")


def _offline_list(store: Store) -> list[dict[str, Any]]:
    """Return the tokens as ``GET /api/tokens`` gives them, read from the database."""
    from dgxmm.clock import from_us
    from dgxmm.server.access.tokens import Tokens

    now = store.clock.now_us()

    def iso(us: int | None) -> str | None:
        return None if us is None else from_us(us).isoformat()

    return [
        {
            "id": record.id,
            "name": record.name,
            "role": record.role.value,
            "state": record.state(now).value,
            "created_at": iso(record.created_at),
            "expires_at": iso(record.expires_at),
            "revoked_at": iso(record.revoked_at),
        }
        for record in Tokens(store.engine, store.clock).list()
    ]
