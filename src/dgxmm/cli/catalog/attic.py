"""``dgxmm attic``: list, restore, remove what was dropped from the catalog."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, Target, command, table

__all__ = ["app"]

app = typer.Typer(help="The catalog's attic: dropped queries and jobs.", no_args_is_help=True)


class Kind(StrEnum):
    """What the attic holds."""

    QUERY = "query"
    JOB = "job"


KindArgument = Annotated[Kind, typer.Argument(help="query or job.")]
IdOption = Annotated[
    int | None, typer.Option("--id", help="The entry (default: the most recently dropped).")
]


@command(app, "list")
def list_attic(where: Target) -> Answer:
    """List the attic, the most recently dropped first."""
    if where.offline:
        with where.store() as store:
            rows = [e.to_json() for e in store.attic()]
    else:
        with where.client() as api:
            rows = api.get("/api/attic")["attic"]
    lines = [
        (r["id"], r["kind"], r["name"], r["dropped_version"], r["dropped_by"], r["why"])
        for r in rows
    ]
    headers = ("ID", "KIND", "NAME", "DROPPED IN", "BY", "WHY")
    return Answer(value=rows, text=table(headers, lines, "the attic is empty"))


@command(app, "restore")
def restore(where: Target, kind: KindArgument, name: str, entry_id: IdOption = None) -> Answer:
    """Bring a query or job back (refused while one of that name is in the catalog)."""
    if where.offline:
        from dgxmm.store import Subject  # the database's code loads only for --offline

        with where.store() as store:
            done: dict[str, Any] = store.restore_from_attic(
                Subject(kind.value), name, entry_id=entry_id, actor="cli"
            ).to_json()
    else:
        with where.client() as api:
            done = api.post(
                "/api/attic/restore", {"kind": kind.value, "name": name, "id": entry_id}
            )
    switched_off = done.get("switched_off")
    text = f"restored {kind.value} {name} (catalog version {done['version']})"
    return Answer(value=done, text=text + (f"; {switched_off}" if switched_off else ""))


@command(app, "remove")
def remove(where: Target, kind: KindArgument, name: str, entry_id: IdOption = None) -> Answer:
    """Delete a query or job from the attic for good."""
    if where.offline:
        from dgxmm.store import Subject

        with where.store() as store:
            removed = store.remove_from_attic(
                Subject(kind.value), name, entry_id=entry_id, actor="cli"
            ).to_json()
    else:
        with where.client() as api:
            body = {"kind": kind.value, "name": name, "id": entry_id}
            removed = api.post("/api/attic/remove", body)["removed"]
    return Answer(
        value={"removed": removed},
        text=f"removed {kind.value} {name} (entry {removed['id']}) for good",
    )
