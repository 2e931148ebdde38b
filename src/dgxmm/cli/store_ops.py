"""``dgxmm store`` (checkpoint, backup, restore, compact); ``dgxmm catalog`` (export, import,
rollback)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from dgxmm.cli.common import DataOption, DbOption, JsonOption, handles_errors, open_store, out
from dgxmm.places import DEFAULT_DATA_DIR as DEFAULT_DATA

__all__ = ["catalog_app", "store_app"]

ProgressOption = Annotated[
    bool | None,
    typer.Option("--progress/--no-progress", help="Show a progress bar (default: on a terminal)."),
]


@contextmanager
def progress_bar(label: str, show: bool | None) -> Iterator[Callable[[int, int], None]]:
    """Yield a ``progress(done, total)`` that draws a bar on stderr, or does nothing."""
    if show is None:
        show = sys.stderr.isatty()
    if not show:
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


store_app = typer.Typer(help="Store operations.", no_args_is_help=True)
catalog_app = typer.Typer(
    help="The catalog file (saved queries and jobs, JSON).", no_args_is_help=True
)


@store_app.command("checkpoint")
@handles_errors
def checkpoint(data: DataOption = DEFAULT_DATA, db: DbOption = None) -> None:
    """Checkpoint the database."""
    with open_store(data, db) as store:
        typer.echo(store.checkpoint())


@store_app.command("compact")
@handles_errors
def compact(data: DataOption = DEFAULT_DATA, db: DbOption = None) -> None:
    """Rebuild the database compactly."""
    with open_store(data, db) as store:
        typer.echo(store.compact())


@store_app.command("backup")
@handles_errors
def backup(
    directory: Path,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
    as_json: JsonOption = False,
    progress: ProgressOption = None,
) -> None:
    """Back up into a directory: a full copy the first time, what changed after."""
    with open_store(data, db) as store, progress_bar("backup", progress) as report:
        result = store.backup(directory.absolute(), progress=report)  # a CLI path: from here
    out(
        {"directory": str(result.directory), "sequence": result.sequence, "method": result.method,
         "reason": result.reason, "items": result.items, "bytes_written": result.bytes_written},
        as_json,
        f"backup {result.sequence} ({result.method_text}) in {result.directory}: "
        f"{result.items} item(s), {result.bytes_written} bytes",
    )  # fmt: skip


@store_app.command("restore")
@handles_errors
def restore(
    directory: Path,
    target: Annotated[
        str, typer.Argument(help="A new SQLite file, or an empty PostgreSQL database URL.")
    ],
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
    progress: ProgressOption = None,
) -> None:
    """Rebuild a database from a backup directory into a new place, verified."""
    with open_store(data, db) as store, progress_bar("restore", progress) as report:
        place = target if "://" in target else str(Path(target).absolute())
        result = store.restore(directory.absolute(), place, progress=report)
    typer.echo(f"restored run {result.sequence} into {result.target}: {result.items} item(s)")


@catalog_app.command("export")
@handles_errors
def export(path: Path, data: DataOption = DEFAULT_DATA, db: DbOption = None) -> None:
    """Write the catalog (saved queries and jobs) to a JSON file."""
    with open_store(data, db) as store:
        document = store.export_catalog(path)
    queries, jobs = len(document.get("queries", [])), len(document.get("jobs", []))
    typer.echo(f"wrote {path}: {queries} query(ies), {jobs} job(s)")


@catalog_app.command("import")
@handles_errors
def import_(
    path: Path,
    replace: Annotated[bool, typer.Option(help="Remove what the file does not hold.")] = False,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
) -> None:
    """Read a catalog file, all or nothing."""
    with open_store(data, db) as store:
        result = store.import_catalog(path, actor="cli", replace=replace)
    typer.echo(
        f"imported {result.queries} query(ies) and {result.jobs} job(s)"
        + (f", removed {result.dropped}" if result.dropped else "")
        + f" (catalog version {result.version})"
    )


@catalog_app.command("rollback")
@handles_errors
def rollback(
    version: Annotated[int, typer.Argument(help="The catalog version to go back to.", min=0)],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would change; change nothing.")
    ] = False,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Put the definitions back as they were at VERSION, as one new catalog version."""
    with open_store(data, db) as store:
        result = store.rollback(version, actor="cli", dry_run=dry_run)
    lines = [
        f"{step.change.value} {step.kind.value} {step.name}"
        + (f" ({step.switched_off})" if step.switched_off else "")
        for step in result.steps
    ]
    if not lines:
        head = f"nothing to change: the catalog is as it was at version {version}"
    elif dry_run:
        head = f"a rollback to version {version} would change:"
    else:
        head = f"rolled back to version {version} as catalog version {result.version}:"
    out(result.to_json(), as_json, "\n".join([head, *lines]))
