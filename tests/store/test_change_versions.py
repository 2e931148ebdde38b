"""The live topics' change counters: bumped in the transaction of a change, read in one query."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

import pytest
from sqlalchemy import event, func, insert, select
from store.storekit import FakeTimer
from support import wait_for

from dgxmm.errors import DefinitionError
from dgxmm.jobs import JobRun
from dgxmm.store import Store, Topic, Trigger, reading, versions, writing
from dgxmm.store.schema import change_keys, change_versions, settings


def jobs_version(store: Store) -> int:
    return store.versions.read([Topic.JOBS])[Topic.JOBS]


def committed_jobs_version(store: Store) -> int:
    with reading(store.engine) as connection:
        return int(
            connection.execute(
                select(change_versions.c.version).where(change_versions.c.topic == "jobs")
            ).scalar_one()
        )


def insert_and_fail(store: Store) -> None:
    with writing(store.engine) as connection:
        connection.execute(insert(settings).values(key="k", value="1", version=1, updated_at=0))
        raise RuntimeError("rolled back")


def test_it_bumps_the_jobs_topic_at_a_define_a_drop_and_a_run(store: Store) -> None:
    before = jobs_version(store)
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    defined = jobs_version(store)
    assert defined > before
    assert jobs_version(store) == defined  # reading bumps nothing
    store.drop_job("cp")
    assert jobs_version(store) > defined


def test_it_bumps_nothing_for_a_change_rolled_back_or_refused(store: Store) -> None:
    before = jobs_version(store)
    with pytest.raises(DefinitionError):
        store.define_job(name="bad", schedule="61 * * * *", action="checkpoint")
    with pytest.raises(RuntimeError):
        insert_and_fail(store)
    assert jobs_version(store) == before


def test_it_bumps_once_per_transaction_and_leaves_other_topics(store: Store) -> None:
    before = store.versions.read(list(Topic))
    with writing(store.engine) as connection:
        for i in range(3):
            connection.execute(
                insert(settings).values(key=f"k{i}", value="1", version=1, updated_at=0)
            )
    after = store.versions.read(list(Topic))
    assert after == {**before, Topic.JOBS: before[Topic.JOBS] + 1}


def test_every_instance_reads_the_same_counters(open_store: Callable[..., Store]) -> None:
    # On SQLite, a second store on the file (the CLI's --offline beside dgxmm serve).
    first = open_store()
    second = open_store()
    first.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    assert jobs_version(second) == jobs_version(first) > 0


def test_a_read_is_one_query_whatever_the_topics(store: Store) -> None:
    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        store.versions.read(list(Topic))
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    queries = [s for s in statements if not s.startswith(("BEGIN", "COMMIT", "ROLLBACK"))]
    assert len(queries) == 1
    assert "change_versions" in queries[0]


def note_and_fail(store: Store) -> None:
    with writing(store.engine) as connection:
        store.versions.note(connection, Topic.JOBS, "ghost")
        raise RuntimeError("rolled back")


def run_once(store: Store, name: str) -> None:
    """Claim and finish a run of ``name`` as the host does."""
    job = next(j for j in store.user_jobs().jobs if j.name == name)
    now = store.clock.now_us()
    run = JobRun(job, scheduled_at=now, started_at=now, timer=FakeTimer())
    run_id = store.runs.claim(run, Trigger.MANUAL)
    assert run_id is not None
    assert store.runs.finish(run_id, run.run())


def test_a_run_names_its_job_and_a_define_names_nothing(store: Store) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    store.define_job(name="other", schedule="0 3 * * *", action="checkpoint")
    before = jobs_version(store)
    run_once(store, "cp")
    after = jobs_version(store)
    assert after == before + 2  # the claim and the finish, each its own version
    assert store.versions.keys_since(Topic.JOBS, before, after) == frozenset({"cp"})
    assert store.versions.keys_since(Topic.JOBS, after, after) == frozenset()
    store.define_job(name="late", schedule="0 4 * * *", action="checkpoint")
    run_once(store, "other")
    # A define may add a row or move the order: a page behind it is fetched whole.
    assert store.versions.keys_since(Topic.JOBS, before, jobs_version(store)) is None
    since_define = store.versions.keys_since(Topic.JOBS, after + 1, jobs_version(store))
    assert since_define == frozenset({"other"})


def test_a_rolled_back_note_leaves_nothing(store: Store) -> None:
    before = jobs_version(store)
    with pytest.raises(RuntimeError):
        note_and_fail(store)
    assert jobs_version(store) == before
    with writing(store.engine) as connection:
        store.versions.note(connection, Topic.JOBS, "real")
        store.versions.note(connection, Topic.JOBS, "real")  # twice in one change is once
    assert jobs_version(store) == before + 1
    assert store.versions.keys_since(Topic.JOBS, before, before + 1) == frozenset({"real"})


def test_too_many_keys_or_too_old_a_version_is_fetched_whole(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = jobs_version(store)
    with writing(store.engine) as connection:
        for i in range(versions.MOST_KEYS + 1):
            store.versions.note(connection, Topic.JOBS, f"job{i}")
    assert store.versions.keys_since(Topic.JOBS, before, before + 1) is None
    monkeypatch.setattr(versions, "KEPT_VERSIONS", 10)
    for i in range(25):
        with writing(store.engine) as connection:
            store.versions.note(connection, Topic.JOBS, f"again{i}")
    now = jobs_version(store)
    assert store.versions.keys_since(Topic.JOBS, now - 11, now) is None  # past the window
    assert store.versions.keys_since(Topic.JOBS, now - 2, now) == frozenset({"again23", "again24"})
    with writing(store.engine) as connection:  # the older ones were forgotten as it went
        kept = connection.execute(select(func.count()).select_from(change_keys)).scalar_one()
    assert kept <= 20


def test_kept_counters_are_never_behind_this_processs_own_commit(store: Store) -> None:
    """What the poll answers from memory: right after a commit of this process, either the
    kept counters include it or ``latest`` says None (the poll then reads)."""
    assert store.versions.latest([Topic.JOBS]) is None  # nothing read yet: it starts keeping
    wait_for(lambda: store.versions.latest([Topic.JOBS]) is not None, "the first kept read")
    assert store.versions.latest([Topic.JOBS]) == store.versions.read([Topic.JOBS])
    for i in range(100):
        store.define_job(name=f"cp{i}", schedule="0 3 * * *", action="checkpoint")
        kept = store.versions.latest([Topic.JOBS])
        committed = committed_jobs_version(store)  # not through read(): that keeps what it read
        assert kept is None or kept[Topic.JOBS] >= committed
        if i % 10 == 0:  # now and then let the keeper catch up: memory answers, and right
            wait_for(lambda: store.versions.latest([Topic.JOBS]) is not None, "caught up")
            assert store.versions.latest([Topic.JOBS]) == {Topic.JOBS: committed}


def test_another_processs_commit_reaches_the_kept_counters(
    open_store: Callable[..., Store],
) -> None:
    here, there = open_store(), open_store()
    store_latest = here.versions.latest
    store_latest([Topic.JOBS])
    wait_for(lambda: store_latest([Topic.JOBS]) is not None, "the first kept read")
    there.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    committed = jobs_version(there)
    wait_for(
        lambda: (store_latest([Topic.JOBS]) or {}).get(Topic.JOBS) == committed,
        "the other store's commit",
        timeout_s=20 * versions.KEEP_S,
    )
    here.close()
    assert store_latest([Topic.JOBS]) is None  # closed: no keeper, nothing trusted


def test_a_close_during_the_keepers_read_leaves_nothing_trusted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = store.versions
    kept.latest([Topic.JOBS])
    wait_for(lambda: kept.latest([Topic.JOBS]) is not None, "the first kept read")
    entered, release = threading.Event(), threading.Event()
    real_read = kept.read

    def held_read(topics: Iterable[Topic]) -> dict[Topic, int]:
        entered.set()
        release.wait(30)
        return real_read(topics)

    monkeypatch.setattr(kept, "read", held_read)
    assert entered.wait(30)  # the keeper is inside its read
    closing = threading.Thread(target=kept.close)
    closing.start()
    time.sleep(0.1)  # close() has begun and waits for the keeper
    release.set()
    closing.join(30)
    assert kept.latest([Topic.JOBS]) is None


def test_counters_moved_back_by_a_restore_are_kept_as_read(store: Store) -> None:
    def set_jobs(version: int) -> None:
        with writing(store.engine) as connection:
            connection.exec_driver_sql(
                f"UPDATE change_versions SET version = {version} WHERE topic = 'jobs'"
            )

    set_jobs(50)
    store.versions.latest([Topic.JOBS])
    wait_for(lambda: store.versions.latest([Topic.JOBS]) == {Topic.JOBS: 50}, "version 50")
    set_jobs(7)  # as a restore from an older backup leaves it
    wait_for(
        lambda: store.versions.latest([Topic.JOBS]) == {Topic.JOBS: 7},
        "the restored version",
        timeout_s=20 * versions.KEEP_S,
    )
