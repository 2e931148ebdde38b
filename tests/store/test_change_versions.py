"""The live topics' change counters: bumped in the transaction of a change, read in one query."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import event, insert

from dgxmm.errors import DefinitionError
from dgxmm.store import Store, Topic, writing
from dgxmm.store.schema import settings


def jobs_version(store: Store) -> int:
    return store.versions.read([Topic.JOBS])[Topic.JOBS]


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
