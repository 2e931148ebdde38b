"""The store's files are its owner's alone: directories 0700, files 0600."""

from __future__ import annotations

import stat
from pathlib import Path

from dgxmm.jobs import Channel
from dgxmm.store import Store


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_store_is_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "data"
    store = Store.open(data / "dgxmm.db")
    try:
        store.define_query("q", None, "SELECT 1")  # a write: the WAL and its index exist
        store.workload_stats.record_query(  # the sidecar has news
            Channel.API, started_at=store.clock.now_us(), duration_us=1, failed=False
        )
    finally:
        store.close()
    assert _mode(data) == 0o700
    files = sorted(p.name for p in data.iterdir())
    assert {"dgxmm.db", "dgxmm.db.workload.json", "dgxmm.db.dirty-pages"} <= set(files)
    assert {name: _mode(data / name) for name in files} == dict.fromkeys(files, 0o600)


def test_the_wal_and_its_index_take_the_databases_mode(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    try:
        store.define_query("q", None, "SELECT 1")
        wal, shm = tmp_path / "s.db-wal", tmp_path / "s.db-shm"
        assert wal.exists()
        assert shm.exists()
        assert (_mode(wal), _mode(shm)) == (0o600, 0o600)
    finally:
        store.close()


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    # dgxmm does not change what a person set on purpose; it only creates privately.
    Store.open(tmp_path / "s.db").close()
    (tmp_path / "s.db").chmod(0o640)
    Store.open(tmp_path / "s.db").close()
    assert _mode(tmp_path / "s.db") == 0o640
