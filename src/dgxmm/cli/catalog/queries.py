"""``dgxmm queries``: list, define, drop, run saved queries, on the server or ``--offline``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dgxmm.cli.common import Answer, Target, command, json_option, table
from dgxmm.errors import InvalidInput
from dgxmm.jobs import Channel

__all__ = ["app"]

app = typer.Typer(help="Saved queries.", no_args_is_help=True)


@command(app, "list")
def list_queries(where: Target) -> Answer:
    """List the saved queries."""
    rows = where.either(
        lambda store: [q.to_json() for q in store.queries()],
        lambda api: api.get("/api/queries")["queries"],
    )
    lines = [
        (r["name"], ", ".join(f"{n}: {k}" for n, k in r["params"].items()) or "-", r["body"])
        for r in rows
    ]
    return Answer(value=rows, text=table(("NAME", "PARAMETERS", "SQL"), lines, "no saved queries"))


@command(app, "define")
def define(
    where: Target,
    name: str,
    body: Annotated[str | None, typer.Option(help="The SQL, with :name parameters.")] = None,
    body_file: Annotated[
        Path | None, typer.Option("--body-file", help="Read the SQL from a file.")
    ] = None,
    params: Annotated[
        str, typer.Option(help='Parameters as JSON, e.g. \'{"days": "int"}\'.')
    ] = "{}",
    description: Annotated[str | None, typer.Option()] = None,
) -> Answer:
    """Define or replace a saved query."""
    if body_file is not None and body is None:
        body = body_file.read_text()
    elif (body is None) == (body_file is None):
        raise InvalidInput("body", "give the SQL with --body or --body-file (one of them)")
    assert body is not None
    parsed = json_option(params, "params")
    keys = {"name": name, "params": parsed, "body": body, "description": description}
    row = where.either(
        lambda store: store.define_query(name, parsed, body, description, actor="cli").to_json(),
        lambda api: api.post("/api/queries/define", keys),
    )
    return Answer(value=row, text=f"defined {name} (catalog version {row['version']})")


@command(app, "drop")
def drop(where: Target, name: str) -> Answer:
    """Remove a saved query (refused while a job uses it)."""
    where.either(
        lambda store: store.drop_query(name, actor="cli"),
        lambda api: api.post("/api/queries/drop", {"name": name}),
    )
    return Answer(value={"dropped": name}, text=f"dropped {name}")


@command(app, "run")
def run(
    where: Target,
    name: str,
    args: Annotated[str, typer.Option(help="Arguments as JSON, e.g. '{\"days\": 7}'.")] = "{}",
) -> Answer:
    """Run a saved query that only reads, now (counted in the workload statistics as cli)."""
    parsed = json_option(args, "args")
    if not isinstance(parsed, dict):
        raise InvalidInput("args", "expected an object of {parameter: value}")
    keys = {"name": name, "args": parsed, "channel": Channel.CLI.value}
    detail = where.either(
        lambda store: store.run_query(name, parsed, channel=Channel.CLI, actor="cli"),
        lambda api: api.post("/api/queries/run", keys)["detail"],
    )
    return Answer(value={"name": name, "detail": detail}, text=f"ran {name}: {detail}")
