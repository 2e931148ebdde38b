"""``dgxmm queries``: list, define, drop saved queries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dgxmm.cli.common import DataOption, DbOption, JsonOption, handles_errors, open_store, out
from dgxmm.errors import InvalidInput
from dgxmm.places import DEFAULT_DATA_DIR as DEFAULT_DATA

__all__ = ["app"]

app = typer.Typer(help="Saved queries.", no_args_is_help=True)


@app.command("list")
@handles_errors
def list_queries(
    data: DataOption = DEFAULT_DATA, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """List the saved queries."""
    with open_store(data, db) as store:
        queries = store.queries()
    lines = [
        f"{q.name}({', '.join(f'{n}: {k.value}' for n, k in q.params.items())})\t{q.body}"
        for q in queries
    ]
    out([q.to_json() for q in queries], as_json, "\n".join(lines) or "no saved queries")


@app.command("define")
@handles_errors
def define(
    name: str,
    body: Annotated[str | None, typer.Option(help="The SQL, with :name parameters.")] = None,
    body_file: Annotated[
        Path | None, typer.Option("--body-file", help="Read the SQL from a file.")
    ] = None,
    params: Annotated[
        str, typer.Option(help='Parameters as JSON, e.g. \'{"days": "int"}\'.')
    ] = "{}",
    description: Annotated[str | None, typer.Option()] = None,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
) -> None:
    """Define or replace a saved query."""
    if (body is None) == (body_file is None):
        raise InvalidInput("body", "give the SQL with --body or --body-file (one of them)")
    text = body if body is not None else Path(body_file).read_text()  # type: ignore[arg-type]
    try:
        parsed = json.loads(params)
    except json.JSONDecodeError as error:
        raise InvalidInput("params", f"not valid JSON ({error})") from error
    with open_store(data, db) as store:
        query = store.define_query(name, parsed, text, description, actor="cli")
    typer.echo(f"defined {query.name} (catalog version {query.version})")


@app.command("drop")
@handles_errors
def drop(name: str, data: DataOption = DEFAULT_DATA, db: DbOption = None) -> None:
    """Remove a saved query (refused while a job uses it)."""
    with open_store(data, db) as store:
        store.drop_query(name, actor="cli")
    typer.echo(f"dropped {name}")
