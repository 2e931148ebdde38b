"""The tracked checkpoint: WAL frames read, their pages recorded, the log trusted or not."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgxmm.errors import Busy
from dgxmm.store import Store
from dgxmm.store.pagelog import PageLog
from dgxmm.store.wal import SqliteFiles, scan_wal


def connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    return connection


@pytest.fixture
def db(tmp_path: Path) -> Iterator[tuple[Path, sqlite3.Connection]]:
    path = tmp_path / "t.db"
    connection = connect(path)
    connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    try:
        yield path, connection
    finally:
        connection.close()


def test_it_reads_the_page_of_every_frame_in_the_wal(db: tuple[Path, sqlite3.Connection]) -> None:
    path, connection = db
    connection.executemany("INSERT INTO t (body) VALUES (?)", [("x" * 1000,)] * 200)
    scan = scan_wal(path.with_name("t.db-wal"))
    count = connection.execute("PRAGMA page_count").fetchone()[0]
    _busy, frames, _copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert scan.salts is not None
    assert scan.frames == frames
    assert scan.pages == set(range(1, count + 1))  # a new table: every page was written


def test_it_reads_only_the_frames_it_has_not_seen(db: tuple[Path, sqlite3.Connection]) -> None:
    path, connection = db
    connection.executemany("INSERT INTO t (body) VALUES (?)", [("x" * 1000,)] * 200)
    wal = path.with_name("t.db-wal")
    first = scan_wal(wal)
    assert first.salts is not None
    connection.execute("UPDATE t SET body = 'y' WHERE id = 200")
    second = scan_wal(wal, [*first.salts, first.frames])
    assert second.frames > first.frames
    assert 0 < len(second.pages) <= 3  # the last leaf (and the root, the header page)
    assert scan_wal(path.with_name("none-wal")).salts is None


def test_it_records_the_pages_a_checkpoint_copies(db: tuple[Path, sqlite3.Connection]) -> None:
    path, connection = db
    files = SqliteFiles(path)
    try:
        start = files.checkpoint()
        connection.executemany("INSERT INTO t (body) VALUES (?)", [("x" * 1000,)] * 100)
        result = files.checkpoint()
        assert (result.complete, result.trusted) == (True, True)
        assert result.generation == start.generation + 1
        count = connection.execute("PRAGMA page_count").fetchone()[0]
        changed = files.pagelog.changed_since(start.generation, count)
        assert len(changed) == result.pages >= 25
        assert files.pagelog.changed_since(result.generation, count) == []
    finally:
        files.close()
    again = PageLog.load(path.with_name("t.db.dirty-pages"))
    assert (again.tracking_id, again.generation) == (
        files.pagelog.tracking_id,
        result.generation + 1,
    )


def test_it_distrusts_the_log_after_a_checkpoint_it_did_not_do(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, connection = db
    files = SqliteFiles(path)
    try:
        base = files.checkpoint()
        connection.execute("INSERT INTO t (body) VALUES ('a')")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        result = files.checkpoint()
        assert result.trusted is False
        assert not files.pagelog.is_trusted_since(files.pagelog.tracking_id, base.generation)
        assert files.pagelog.is_trusted_since(files.pagelog.tracking_id, result.generation)
        assert files.checkpoint().trusted is True
    finally:
        files.close()


def test_it_waits_for_an_old_reader_before_it_gives_a_snapshot(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, connection = db
    reader = connect(path)
    files = SqliteFiles(path)
    try:
        connection.execute("INSERT INTO t (body) VALUES ('a')")
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM t").fetchone()  # holds this snapshot
        connection.execute("INSERT INTO t (body) VALUES ('b')")
        with (
            pytest.raises(Busy, match="older snapshot"),
            files.snapshot(deadline=time.monotonic() + 0.2),
        ):
            pass
        reader.execute("ROLLBACK")
        with files.snapshot(deadline=time.monotonic() + 5) as snapshot:
            assert snapshot.page_count == connection.execute("PRAGMA page_count").fetchone()[0]
            assert snapshot.read_page(1)[:16] == b"SQLite format 3\x00"
    finally:
        files.close()
        reader.close()


def test_it_starts_a_new_log_when_the_file_is_damaged(tmp_path: Path) -> None:
    log = PageLog(tmp_path / "p")
    log.record([1, 2, 3], trusted=True, wal=None)
    log.finish([1, 2, 3, 4])
    data = bytearray((tmp_path / "p").read_bytes())
    data[20] ^= 0xFF
    (tmp_path / "p").write_bytes(bytes(data))
    fresh = PageLog.load(tmp_path / "p")
    assert fresh.tracking_id != log.tracking_id
    assert fresh.generation == 0


@given(
    batches=st.lists(st.sets(st.integers(1, 300), max_size=20), max_size=8), since=st.integers(0, 8)
)
def test_it_tells_exactly_the_pages_marked_after_a_generation(
    tmp_path_factory: pytest.TempPathFactory, batches: list[set[int]], since: int
) -> None:
    log = PageLog(tmp_path_factory.mktemp("log") / "p")
    for batch in batches:
        log.record(batch, trusted=True, wal=None)
    # Generation k marked batches[k - 1]: after `since` come the batches from index `since`.
    assert set(log.changed_since(since, 300)) == set().union(*batches[since:])


def test_it_checkpoints_by_itself_once_the_wal_passes_a_few_megabytes(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    try:
        assert store.files is not None
        before = store.files.pagelog.generation
        with store.engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE big (body BLOB)")
            connection.exec_driver_sql(
                "INSERT INTO big WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
                "WHERE i < 2000) SELECT randomblob(3000) FROM c"
            )
        # The connection went back to the pool: the WAL (about 8 MB) was copied and recorded.
        assert store.files.pagelog.generation == before + 1
        scan = scan_wal(store.files.wal_path)
        assert scan.frames > 1500
        with store.files.snapshot(deadline=time.monotonic() + 5) as snapshot:
            assert snapshot.generation == before + 2
    finally:
        store.close()
