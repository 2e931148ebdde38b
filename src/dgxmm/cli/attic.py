"""``dgxmm attic``: list, restore, remove what was dropped from the catalog."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from dgxmm.cli.common import DataOption, DbOption, JsonOption, handles_errors, open_store, out
from dgxmm.places import DEFAULT_DATA_DIR as DEFAULT_DATA
from dgxmm.store import Subject

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


@app.command("list")
@handles_errors
def list_attic(
    data: DataOption = DEFAULT_DATA, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """List the attic, the most recently dropped first."""
    with open_store(data, db) as store:
        entries = store.attic()
    lines = [
        f"{e.id}\t{e.kind.value} {e.name}\tversion {e.dropped_version}\t"
        f"{e.dropped_by or '-'}\t{e.why}"
        for e in entries
    ]
    out([e.to_json() for e in entries], as_json, "\n".join(lines) or "the attic is empty")


@app.command("restore")
@handles_errors
def restore(
    kind: KindArgument,
    name: str,
    entry_id: IdOption = None,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
) -> None:
    """Bring a query or job back (refused while one of that name is in the catalog)."""
    with open_store(data, db) as store:
        done = store.restore_from_attic(Subject(kind.value), name, entry_id=entry_id, actor="cli")
    typer.echo(
        f"restored {kind.value} {name} (catalog version {done.version})"
        + (f"; {done.switched_off}" if done.switched_off else "")
    )


@app.command("remove")
@handles_errors
def remove(
    kind: KindArgument,
    name: str,
    entry_id: IdOption = None,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
) -> None:
    """Delete a query or job from the attic for good."""
    with open_store(data, db) as store:
        removed = store.remove_from_attic(Subject(kind.value), name, entry_id=entry_id, actor="cli")
    typer.echo(f"removed {kind.value} {name} (entry {removed.id}) for good")
