"""A restore into a file never touches the live store, a file it did not make, or a new place
it was not given: the target is resolved (symlinks, ``..``, missing parents) and checked
before anything is created. Runs on both stores: a PostgreSQL store restores a SQLite backup
into a ``sqlite:///`` target."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from store.storekit import Place, make_items, rows

from dgxmm.errors import BackupError, Conflict, InvalidInput
from dgxmm.store import Store, restore


@pytest.fixture
def sqlite_backup(store: Store, tmp_path: Path) -> Path:
    """A SQLite backup directory: the store's own on SQLite, another store's on PostgreSQL."""
    if store.dialect == "sqlite":
        make_items(store)
        store.backup(tmp_path / "bk")
        return tmp_path / "bk"
    other = Store.open(tmp_path / "other" / "store.db")
    try:
        make_items(other)
        other.backup(tmp_path / "bk")
    finally:
        other.close()
    return tmp_path / "bk"


def file_target(store: Store, path: str | Path) -> str:
    """A SQLite target as a caller of this store writes it: ``sqlite:///`` on PostgreSQL."""
    return str(path) if store.dialect == "sqlite" else f"sqlite:///{path}"


def listing(directory: Path) -> list[str]:
    """Every entry under ``directory``, hidden ones too, relative and sorted."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.mark.parametrize("relative", [True, False], ids=["relative", "absolute"])
def test_it_refuses_an_existing_file_reached_through_a_missing_directory(
    store: Store, place: Place, sqlite_backup: Path, relative: bool
) -> None:
    victim = place.data_dir / "victim.txt"
    victim.write_text("precious")
    before = listing(place.data_dir)
    through = "nosuchdir/../victim.txt"
    with pytest.raises(Conflict) as refused:
        store.restore(
            sqlite_backup, file_target(store, through if relative else place.data_dir / through)
        )
    assert refused.value.field == "target"
    assert f"{victim} exists" in str(refused.value)
    assert victim.read_text() == "precious"
    assert listing(place.data_dir) == before  # no nosuchdir, no temporary file


@pytest.mark.parametrize("through", ["nosuchdir/../store.db", "./store.db", "link/store.db"])
def test_it_refuses_the_live_database_however_the_path_reaches_it(
    tmp_path: Path, through: str
) -> None:
    data = tmp_path / "data"
    store = Store.open(data / "store.db")
    try:
        make_items(store)
        store.backup(tmp_path / "bk")
        with store.engine.begin() as connection:
            connection.exec_driver_sql("INSERT INTO items (label) VALUES ('after the backup')")
        (data / "link").symlink_to(data)
        with pytest.raises(Conflict, match="the store's database") as refused:
            store.restore(tmp_path / "bk", through)
        assert refused.value.field == "target"
        assert not (data / "nosuchdir").exists()
        assert rows(store, "SELECT label FROM items") == [("after the backup",)]
    finally:
        store.close()
    check = sqlite3.connect(data / "store.db")
    try:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert check.execute("SELECT label FROM items").fetchall() == [("after the backup",)]
    finally:
        check.close()


def own_files(store: Store, place: Place) -> list[Path]:
    """The store's own files, whether or not they exist now."""
    if store.path is None:
        assert store.engine.url.database is not None
        return [place.data_dir / f"{store.engine.url.database}.workload.json"]
    return [
        store.path.with_name(store.path.name + suffix)
        for suffix in ("", "-wal", "-shm", "-journal", ".dirty-pages", ".workload.json")
    ]


def test_it_refuses_every_file_of_the_store_whether_or_not_it_exists(
    store: Store, place: Place, sqlite_backup: Path
) -> None:
    for path in own_files(store, place):
        existed = path.exists()
        with pytest.raises(Conflict, match="the store's") as refused:
            store.restore(sqlite_backup, file_target(store, path))
        assert refused.value.field == "target", path
        assert path.exists() is existed, path
        with pytest.raises(Conflict, match="the store's"):
            store.restore(sqlite_backup, file_target(store, path / "inside.db"))


def test_it_refuses_a_path_the_host_protects_before_the_file_exists(
    store: Store, place: Place, sqlite_backup: Path
) -> None:
    token = place.data_dir / "admin-token"
    store.protect_paths([token], what="the server's admin token")
    with pytest.raises(Conflict, match="the server's admin token") as refused:
        store.restore(sqlite_backup, file_target(store, "admin-token"))
    assert refused.value.field == "target"
    assert not token.exists()


def test_it_refuses_a_dangling_symlink_and_creates_nothing_where_it_points(
    store: Store, place: Place, sqlite_backup: Path, tmp_path: Path
) -> None:
    pointed = tmp_path / "elsewhere" / "new.db"
    (place.data_dir / "dangling.db").symlink_to(pointed)
    with pytest.raises(Conflict, match="exists") as refused:
        store.restore(sqlite_backup, file_target(store, "dangling.db"))
    assert refused.value.field == "target"
    assert not (tmp_path / "elsewhere").exists()


def test_it_refuses_a_place_inside_a_file(store: Store, place: Place, sqlite_backup: Path) -> None:
    (place.data_dir / "notes.txt").write_text("mine")
    with pytest.raises(Conflict, match=re.escape("notes.txt")) as refused:
        store.restore(sqlite_backup, file_target(store, "notes.txt/deeper/new.db"))
    assert refused.value.field == "target"
    assert (place.data_dir / "notes.txt").read_text() == "mine"


def test_it_refuses_the_companion_files_of_another_database(
    store: Store, sqlite_backup: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    made = sqlite3.connect(other)
    made.execute("CREATE TABLE t (x)")
    made.close()
    with pytest.raises(Conflict, match=re.escape("other.db")) as refused:
        store.restore(sqlite_backup, file_target(store, f"{other}-wal"))
    assert refused.value.field == "target"
    assert not Path(f"{other}-wal").exists()
    (tmp_path / "new.db-wal").write_bytes(b"stale")
    with pytest.raises(Conflict, match=re.escape("new.db-wal")):
        store.restore(sqlite_backup, file_target(store, tmp_path / "new.db"))
    assert not (tmp_path / "new.db").exists()


def test_it_refuses_a_target_inside_the_backup_directory(store: Store, sqlite_backup: Path) -> None:
    with pytest.raises(Conflict, match="backup directory") as refused:
        store.restore(sqlite_backup, file_target(store, sqlite_backup / "restored.db"))
    assert refused.value.field == "target"
    assert not (sqlite_backup / "restored.db").exists()


def test_it_makes_missing_parents_of_a_new_target_and_reports_the_resolved_path(
    store: Store, sqlite_backup: Path, tmp_path: Path
) -> None:
    result = store.restore(sqlite_backup, file_target(store, tmp_path / "a/missing/../b/new.db"))
    assert result.target == str(tmp_path / "a" / "b" / "new.db")
    assert listing(tmp_path / "a") == ["b", "b/new.db"]  # no 'missing', no temporary file
    engine = sa.create_engine(f"sqlite:///{result.target}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    finally:
        engine.dispose()


def test_it_removes_the_directories_it_made_when_a_restore_fails(
    store: Store, sqlite_backup: Path, tmp_path: Path
) -> None:
    data = sqlite_backup / "000001" / "pages.bin"
    damaged = bytearray(data.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    data.write_bytes(bytes(damaged))
    (tmp_path / "kept").mkdir()
    with pytest.raises(BackupError, match="checksum"):
        store.restore(sqlite_backup, file_target(store, tmp_path / "kept/a/b/new.db"))
    assert listing(tmp_path / "kept") == []


def crash_in_a_restore(target: Path) -> Path:
    """Leave what a restore killed half way leaves; return its scratch directory."""
    program = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from dgxmm.store.backups.directory import restoring_beside\n"
        "with restoring_beside(Path(sys.argv[1])) as scratch:\n"
        "    (scratch / 'restoring.db').write_bytes(b'half')\n"
        "    print(scratch, flush=True)\n"
        "    os._exit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(target)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 3, done.stderr
    return Path(done.stdout.strip())


def test_it_removes_only_the_leftovers_it_can_prove_are_its_own(
    store: Store, sqlite_backup: Path, tmp_path: Path
) -> None:
    from dgxmm.store.backups.directory import restoring_beside

    place = tmp_path / "restores"
    place.mkdir()
    lookalikes = [place / ".new.db.restoring", place / ".dgxmm-restore-0000"]
    lookalikes[0].write_text("someone's file")
    lookalikes[1].mkdir()
    (lookalikes[1] / "notes.txt").write_text("someone's directory")
    leftover = crash_in_a_restore(place / "crashed.db")
    assert leftover.parent == place
    with restoring_beside(place / "other.db") as under_way:  # another restore, still going
        store.restore(sqlite_backup, file_target(store, place / "new.db"))
        assert under_way.exists()
    assert not leftover.exists()
    assert all(p.exists() for p in lookalikes)
    assert lookalikes[0].read_text() == "someone's file"
    assert sorted(p.name for p in place.iterdir() if not p.name.startswith(".")) == ["new.db"]


def test_it_restores_a_backup_only_into_a_target_of_its_own_kind(
    store: Store, place: Place, sqlite_backup: Path, tmp_path: Path
) -> None:
    with pytest.raises(InvalidInput, match="SQLite backup") as refused:
        restore(sqlite_backup, "postgresql+psycopg://nobody@/nowhere?host=/nonexistent")
    assert refused.value.field == "target"
    if store.dialect == "postgresql":
        store.backup(tmp_path / "pg-bk")
        with pytest.raises(InvalidInput, match="PostgreSQL backup") as refused:
            store.restore(tmp_path / "pg-bk", f"sqlite:///{tmp_path / 'new.db'}")
        assert refused.value.field == "target"
        assert not (tmp_path / "new.db").exists()


def test_it_reads_a_bare_path_as_the_stores_kind(
    store: Store, place: Place, sqlite_backup: Path
) -> None:
    victim = place.data_dir / "victim.txt"
    victim.write_text("precious")
    if store.dialect == "sqlite":
        assert store.restore(sqlite_backup, "new.db").target == str(place.data_dir / "new.db")
        return
    before = listing(place.data_dir)
    for bare in ["missing/../victim.txt", "new.db"]:
        with pytest.raises(InvalidInput, match="sqlite:///") as refused:
            store.restore(sqlite_backup, bare)
        assert refused.value.field == "target"
    assert listing(place.data_dir) == before
    assert victim.read_text() == "precious"
    restored = store.restore(sqlite_backup, "sqlite:///new.db")  # the caller says otherwise
    assert restored.target == str(place.data_dir / "new.db")


def test_the_module_function_checks_the_resolved_path_too(
    sqlite_backup: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    with pytest.raises(Conflict, match="exists") as refused:
        restore(sqlite_backup, tmp_path / "nosuchdir" / ".." / "victim.txt")
    assert refused.value.field == "target"
    assert not (tmp_path / "nosuchdir").exists()
    assert victim.read_text() == "precious"
    marker = json.loads((sqlite_backup / "dgxmm-backup.json").read_text())
    assert marker["kind"] == "sqlite"
