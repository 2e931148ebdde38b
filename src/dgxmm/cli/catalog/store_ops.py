"""``dgxmm store`` (checkpoint, backup, restore, compact); ``dgxmm catalog`` (export, import,
rollback), on the server or ``--offline``.

Paths are taken from where the command runs and sent absolute: the server reads and writes
them on its machine, which is this one unless ``--url`` names another.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, Target, command
from dgxmm.errors import InvalidInput
from dgxmm.words import counted

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


@command(store_app, "checkpoint")
def checkpoint(where: Target) -> Answer:
    """Checkpoint the database."""
    return _operation(where, "checkpoint")


@command(store_app, "compact")
def compact(where: Target) -> Answer:
    """Rebuild the database compactly."""
    return _operation(where, "compact")


def _operation(where: Target, name: str) -> Answer:
    if where.offline:
        with where.store() as store:
            detail = store.checkpoint() if name == "checkpoint" else store.compact()
        value: dict[str, Any] = {"operation": name, "detail": detail}
    else:
        with where.client() as api:
            value = api.post(f"/api/store/{name}")
    return Answer(value=value, text=str(value["detail"]))


@command(store_app, "backup")
def backup(where: Target, directory: Path, progress: ProgressOption = None) -> Answer:
    """Back up into a directory: a full copy the first time, what changed after."""
    if where.offline:
        with where.store() as store, progress_bar("backup", progress) as report:
            result = store.backup(directory.absolute(), progress=report)
        value: dict[str, Any] = {
            "directory": str(result.directory), "sequence": result.sequence,
            "method": result.method, "reason": result.reason, "items": result.items,
            "bytes_written": result.bytes_written,
        }  # fmt: skip
    else:
        with where.client() as api:
            value = api.post("/api/store/backup", {"directory": str(directory.absolute())})
    how = value["method"] + (f" ({value['reason']})" if value["reason"] else "")
    text = (
        f"backup {value['sequence']} ({how}) in {value['directory']}: "
        f"{counted(value['items'], 'item')}, {value['bytes_written']} bytes"
    )
    return Answer(value=value, text=text)


@command(store_app, "restore")
def restore(
    where: Target,
    directory: Path,
    target: Annotated[
        str, typer.Argument(help="A new SQLite file, or an empty PostgreSQL database URL.")
    ],
    progress: ProgressOption = None,
) -> Answer:
    """Rebuild a database from a backup directory into a new place, verified."""
    place = target if "://" in target else str(Path(target).absolute())
    if where.offline:
        with where.store() as store, progress_bar("restore", progress) as report:
            result = store.restore(directory.absolute(), place, progress=report)
        value: dict[str, Any] = {
            "target": result.target, "sequence": result.sequence, "items": result.items,
        }  # fmt: skip
    else:
        body = {"directory": str(directory.absolute()), "target": place}
        with where.client() as api:
            value = api.post("/api/store/restore", body)
    items = counted(value["items"], "item")
    text = f"restored run {value['sequence']} into {value['target']}: {items}"
    return Answer(value=value, text=text)


@command(catalog_app, "export")
def export(where: Target, path: Path) -> Answer:
    """Write the catalog (saved queries and jobs) to a JSON file."""
    if where.offline:
        with where.store() as store:
            document = store.export_catalog(path)
    else:
        with where.client() as api:
            document = api.get("/api/catalog")
        from dgxmm.store.files import write_atomic  # the store's code loads only when used

        write_atomic(path, json.dumps(document, indent=2).encode() + b"\n", durable=False)
    queries, jobs = len(document.get("queries", [])), len(document.get("jobs", []))
    value = {"path": str(path), "queries": queries, "jobs": jobs}
    return Answer(
        value=value, text=f"wrote {path}: {counted(queries, 'query')}, {counted(jobs, 'job')}"
    )


@command(catalog_app, "import")
def import_(
    where: Target,
    path: Path,
    replace: Annotated[bool, typer.Option(help="Remove what the file does not hold.")] = False,
) -> Answer:
    """Read a catalog file, all or nothing."""
    if where.offline:
        with where.store() as store:
            result = store.import_catalog(path, actor="cli", replace=replace)
        value: dict[str, Any] = {
            "version": result.version, "queries": result.queries, "jobs": result.jobs,
            "dropped": result.dropped, "attic": result.attic,
        }  # fmt: skip
    else:
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise InvalidInput("path", f"{path} cannot be read as JSON ({error})") from None
        with where.client() as api:
            value = api.post("/api/catalog/import", document, replace=replace or None)
    text = (
        f"imported {counted(value['queries'], 'query')} and {counted(value['jobs'], 'job')}"
        + (f", removed {value['dropped']}" if value["dropped"] else "")
        + f" (catalog version {value['version']})"
    )
    return Answer(value=value, text=text)


@command(catalog_app, "rollback")
def rollback(
    where: Target,
    version: Annotated[int, typer.Argument(help="The catalog version to go back to.", min=0)],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would change; change nothing.")
    ] = False,
) -> Answer:
    """Put the definitions back as they were at VERSION, as one new catalog version."""
    if where.offline:
        with where.store() as store:
            value = store.rollback(version, actor="cli", dry_run=dry_run).to_json()
    else:
        with where.client() as api:
            value = api.post("/api/store/rollback", {"version": version}, dry_run=dry_run or None)
    lines = [
        f"{step['change']} {step['kind']} {step['name']}"
        + (f" ({step['switched_off']})" if step.get("switched_off") else "")
        for step in value["steps"]
    ]
    if not lines:
        head = f"nothing to change: the catalog is as it was at version {version}"
    elif dry_run:
        head = f"a rollback to version {version} would change:"
    else:
        head = f"rolled back to version {version} as catalog version {value['version']}:"
    return Answer(value=value, text="\n".join([head, *lines]))
