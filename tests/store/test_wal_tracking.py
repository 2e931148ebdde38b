"""The tracked checkpoint: WAL frames read, their pages recorded, the log trusted or not."""

from __future__ import annotations

import json
import sqlite3
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgxmm.errors import Busy
from dgxmm.store import Store, restore
from dgxmm.store.backups.pagelog import PageLog
from dgxmm.store.backups.wal import SqliteFiles, scan_wal


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
    second = scan_wal(wal, first.mark())
    assert second.frames > first.frames
    assert 0 < len(second.pages) <= 3  # the last leaf (and the root, the header page)
    assert scan_wal(path.with_name("none-wal")).salts is None


SPILL = (  # far more than the page cache holds: SQLite spills these frames into the WAL
    "INSERT INTO t (body) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
    "SELECT i + 1 FROM c WHERE i < 100000) SELECT hex(randomblob(50)) FROM c"
)


def test_it_counts_the_frames_up_to_the_last_commit_only(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, connection = db
    connection.executemany("INSERT INTO t (body) VALUES (?)", [("x" * 1000,)] * 50)
    committed = scan_wal(path.with_name("t.db-wal"))
    connection.execute("BEGIN")
    connection.execute(SPILL)
    wal_size = path.with_name("t.db-wal").stat().st_size
    during = scan_wal(path.with_name("t.db-wal"), committed.mark())
    other = connect(path)
    try:
        _busy, frames, _copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        other.close()
    connection.execute("ROLLBACK")
    assert wal_size > 1000 * 4096  # the uncommitted frames are in the file
    assert during.frames == committed.frames == frames
    assert during.pages == set()
    assert during.checksum == committed.checksum != (0, 0)


def test_it_reads_from_frame_1_when_the_last_recorded_frame_is_not_as_recorded(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, connection = db
    connection.executemany("INSERT INTO t (body) VALUES (?)", [("x" * 1000,)] * 50)
    wal = path.with_name("t.db-wal")
    first = scan_wal(wal)
    mark = first.mark()
    assert mark is not None
    assert first.broken is False
    assert scan_wal(wal, mark).pages == set()
    written_over = [*mark[:3], mark[3] ^ 1, mark[4]]
    again = scan_wal(wal, written_over)
    assert again.broken is True
    assert (again.frames, again.pages) == (first.frames, first.pages)


def test_it_checkpoints_by_reading_the_wal_again_after_a_checkpoint_was_killed(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, connection = db
    files = SqliteFiles(path)
    try:
        start = files.checkpoint()
        connection.execute("UPDATE t SET body = 'a' WHERE id = 1")
        commit = scan_wal(files.wal_path)
        assert commit.salts is not None
        # Killed after recording, before finishing: the count it kept was never checked.
        files.pagelog.record(set(), wal=[*commit.salts, 10**6, 0, 0])
        result = files.checkpoint()
        assert result.trusted is True
        count = connection.execute("PRAGMA page_count").fetchone()[0]
        assert commit.pages <= set(files.pagelog.changed_since(start.generation + 1, count))
    finally:
        files.close()


def test_it_reads_the_wal_again_when_sqlite_counts_other_frames_than_it(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, connection = db
    files = SqliteFiles(path)
    try:
        connection.executemany("INSERT INTO t (body) VALUES (?)", [("x" * 1000,)] * 20)
        scan = scan_wal(files.wal_path)
        assert scan.salts is not None
        # A commit frame a kill tore (its checksum fails): SQLite does not count it.
        with open(files.wal_path, "ab") as out:
            out.write(struct.pack(">6I", 2, 99, *scan.salts, 1, 2) + bytes(4096))
        result = files.checkpoint()
        assert (result.trusted, result.frames) == (True, scan.frames)
        assert files.pagelog.wal == [*scan.salts, 0, 0, 0]
    finally:
        files.close()


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
    log.record([1, 2, 3], wal=None)
    log.finish([1, 2, 3, 4], wal=None)
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
        log.record(batch, wal=None)
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


def test_it_tracks_a_commit_written_over_a_rolled_back_transaction(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "data" / "s.db")
    try:
        with store.engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
            connection.exec_driver_sql(
                "INSERT INTO t (body) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
                "SELECT i + 1 FROM c WHERE i < 3000) SELECT 'row ' || i FROM c"
            )
        store.backup(tmp_path / "bk")
        with store.engine.connect() as connection:
            # A job that times out: its frames spill into the WAL, then it rolls back.
            transaction = connection.begin()
            connection.exec_driver_sql(
                "INSERT INTO t (body) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
                "SELECT i + 1 FROM c WHERE i < 100000) SELECT hex(randomblob(50)) FROM c"
            )
            transaction.rollback()
        store.checkpoint()
        with store.engine.begin() as connection:
            connection.exec_driver_sql("UPDATE t SET body = 'changed' WHERE id % 50 = 0")
        store.backup(tmp_path / "bk")
        with store.engine.connect() as connection:
            live = connection.exec_driver_sql("SELECT id, body FROM t ORDER BY id").all()
    finally:
        store.close()
    restore(tmp_path / "bk", tmp_path / "restored.db")
    restored = sqlite3.connect(tmp_path / "restored.db")
    try:
        assert restored.execute("SELECT id, body FROM t ORDER BY id").fetchall() == live
    finally:
        restored.close()


def test_it_compares_once_after_a_log_an_older_dgxmm_wrote_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "data" / "s.db"
    store = Store.open(path)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    store.backup(tmp_path / "bk")
    store.close()
    log = path.with_name("s.db.dirty-pages")
    data = log.read_bytes()
    (length,) = struct.unpack("<I", data[8:12])
    header = json.loads(data[12 : 12 + length])
    del header["format"], header["distrust_reason"]  # as dgxmm wrote it before format 2
    header["wal"] = header["wal"][:3]
    text = json.dumps(header).encode()
    body = data[:8] + struct.pack("<I", len(text)) + text + data[12 + length : -4]
    log.write_bytes(body + struct.pack("<I", zlib.crc32(body)))
    store = Store.open(path)
    try:
        with store.engine.begin() as connection:
            connection.exec_driver_sql("INSERT INTO t (body) VALUES ('a')")
        result = store.backup(tmp_path / "bk")
        assert result.method == "compared"
        assert "older dgxmm" in str(result.reason)
        assert result.method_text == f"compared ({result.reason})"
        again = store.backup(tmp_path / "bk")
        assert (again.method, again.reason, again.method_text) == ("tracked", None, "tracked")
    finally:
        store.close()
