"""Opening a store: where it is, its data directory, its engine, its files, its migrations.

``open_database`` does everything ``Store.open`` needs before the store's services exist:
it reads the target (a SQLite path or ``sqlite:///`` URL, or a PostgreSQL URL), settles the
data directory (beside the file for SQLite; required for PostgreSQL, which has no file to
stand beside), creates the engine, records what a crash left in SQLite's WAL before anything
writes, and migrates. A failure on the way disposes of what it made.

It also names the process in the store (its instance id). On PostgreSQL every connection
carries that id as its ``application_name``, from the first: so a standby that finds the
holder stuck can end exactly that instance's sessions (``runs/instances.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from dgxmm.errors import InvalidInput
from dgxmm.store.backups.wal import SqliteFiles
from dgxmm.store.database import Dialect, Target, create_store_engine, migrate, parse_target
from dgxmm.store.files import make_private_dir
from dgxmm.store.runs.instances import new_instance_id

__all__ = ["Opened", "open_database", "sidecar_path"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    """A migrated database, ready for a ``Store`` to be built on it."""

    target: Target
    engine: Engine
    data_dir: Path
    files: SqliteFiles | None  # SQLite's tracked WAL and pages; None on PostgreSQL
    instance: str  # this process's name in the store (PostgreSQL: its sessions' too)

    def dispose(self) -> None:
        """Let go of the engine and the files (a store that could not be built on them)."""
        self.engine.dispose()
        if self.files is not None:
            self.files.close()


def open_database(target: str | Path, data_dir: str | Path | None) -> Opened:
    """Open and migrate the database at ``target``; ``InvalidInput`` naming the field."""
    place = parse_target(target)
    if data_dir is None:
        if place.path is None:
            raise InvalidInput(
                "data_dir", "a PostgreSQL store needs a data directory for its sidecar"
            )
        directory = place.path.parent
    else:
        directory = Path(data_dir).expanduser().absolute()
    make_private_dir(directory)
    engine = create_store_engine(place)
    instance = new_instance_id()
    if place.dialect is Dialect.POSTGRESQL:
        event.listen(engine, "do_connect", _named(instance))
    files: SqliteFiles | None = None
    try:
        if place.dialect is Dialect.SQLITE:
            assert place.path is not None
            engine.connect().close()  # creates the file, in WAL mode
            files = SqliteFiles(place.path)
            files.checkpoint()  # what a crash left in the WAL, recorded before we write
        migrate(engine, place.dialect)
    except BaseException:
        engine.dispose()
        if files is not None:
            files.close()
        raise
    return Opened(target=place, engine=engine, data_dir=directory, files=files, instance=instance)


def _named(instance: str) -> Any:
    """Return a ``do_connect`` hook giving each new session the instance's name."""

    def name_it(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        params["application_name"] = instance

    return name_it


def sidecar_path(target: Target, data_dir: Path) -> Path:
    """Return where the workload sidecar of the database at ``target`` lives."""
    if target.path is not None:
        return target.path.with_name(target.path.name + ".workload.json")
    return data_dir / f"{target.url.database}.workload.json"
