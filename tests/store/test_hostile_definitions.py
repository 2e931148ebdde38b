"""Definitions a client can send that the store cannot hold: refused naming the field."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from store.catalogkit import nested
from store.storekit import make_items

from dgxmm.errors import Busy, DefinitionError
from dgxmm.store import Store
from dgxmm.store.database import CHANGE_BUSY_MS


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("timeout_ms", 86_400_000_000_000_000, id="timeout-past-timedelta"),
        pytest.param("timeout_ms", 86_399_999_999_999_999, id="timeout-just-under"),
        pytest.param("timeout_ms", 365 * 24 * 3600 * 1000 + 1, id="timeout-past-a-year"),
        pytest.param("memory_limit", 2**63, id="memory-past-64-bits"),
        pytest.param("memory_limit", 2**70, id="memory-far-past"),
    ],
)
def test_it_refuses_limits_no_run_can_hold(store: Store, key: str, value: int) -> None:
    store.define_query("q", None, "SELECT 1")
    limits: dict[str, Any] = {key: value}
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="j", schedule="* * * * *", action="query", query="q", **limits)
    assert refused.value.field == key
    assert str(value) in refused.value.message
    assert store.jobs() == []


def test_it_keeps_the_largest_limits_it_can_hold(store: Store) -> None:
    store.define_query("q", None, "SELECT 1")
    job = store.define_job(
        name="j",
        schedule="* * * * *",
        action="query",
        query="q",
        timeout_ms=365 * 24 * 3600 * 1000,
        memory_limit=2**63 - 1,
    )
    (scheduled,) = [j for j in store.user_jobs().jobs if j.name == "j"]
    assert scheduled.limits.memory_bytes == 2**63 - 1
    assert job.definition["timeout_ms"] == 31_536_000_000


@pytest.mark.parametrize("depth", [50, 200, 2000])
def test_it_refuses_sql_nested_deeper_than_the_parser_goes(store: Store, depth: int) -> None:
    body = "SELECT " + "(" * depth + "1" + ")" * depth
    with pytest.raises(DefinitionError) as refused:
        store.define_query("deep", None, body)
    assert refused.value.field == "body"
    assert "nests too deeply" in refused.value.message
    assert store.queries() == []


@contextmanager
def _writer_holding_the_lock(store: Store) -> Iterator[None]:
    """Hold the write lock of the catalog's tables in another transaction, as a job would."""
    with store.engine.connect() as connection:
        if store.dialect == "sqlite":
            connection.execution_options(dgxmm_write=True)
            connection.begin()
            connection.exec_driver_sql("INSERT INTO items (label) VALUES ('held')")
        else:
            connection.begin()
            connection.exec_driver_sql("LOCK TABLE store_state IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            connection.rollback()


def test_a_definition_beside_a_writer_waits_briefly_then_is_busy(store: Store) -> None:
    make_items(store)
    with _writer_holding_the_lock(store):
        started = time.monotonic()
        with pytest.raises(Busy) as refused:
            store.define_query("q", None, "SELECT 1")
        waited = time.monotonic() - started
    assert "a job is writing; try again" in str(refused.value)
    assert waited >= CHANGE_BUSY_MS / 1000 * 0.5  # it did wait, rather than fail at once
    assert store.queries() == []
    assert store.catalog_version() == 0


def test_a_definition_goes_through_once_the_writer_commits(store: Store) -> None:
    make_items(store)
    release = threading.Event()

    def hold() -> None:
        with _writer_holding_the_lock(store):
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.2)
    threading.Timer(0.3, release.set).start()
    store.define_query("q", None, "SELECT 1")  # waits for the writer, within its bound
    holder.join()
    assert [q.name for q in store.queries()] == ["q"]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        pytest.param("a\x00b", "NUL", id="nul"),
        pytest.param("a\ud800b", "surrogate", id="lone-surrogate"),
    ],
)
def test_it_refuses_query_text_the_databases_cannot_store(
    store: Store, text: str, what: str
) -> None:
    with pytest.raises(DefinitionError) as refused:
        store.define_query("q", None, "SELECT 1", text)
    assert (refused.value.field, what in refused.value.message) == ("description", True)
    with pytest.raises(DefinitionError) as refused:
        store.define_query("q", None, f"SELECT 1 -- {text}")
    assert (refused.value.field, what in refused.value.message) == ("body", True)
    assert store.queries() == []
    assert store.catalog_version() == 0


def test_it_refuses_a_job_holding_a_lone_surrogate_naming_the_key(store: Store) -> None:
    with pytest.raises(DefinitionError) as refused:
        store.define_job(
            name="j", schedule="0 3 * * *", action="checkpoint", description="a\udfffb"
        )
    assert refused.value.field == "description"
    assert store.jobs() == []
    assert store.catalog_version() == 0


@pytest.mark.parametrize("key", ["args", "enabled", "description", "retries"])
def test_a_definition_nesting_deep_is_refused_naming_the_key(store: Store, key: str) -> None:
    store.define_query("q", {"a": "string"}, "SELECT :a")
    keys: dict[str, Any] = {"args": {"a": "x"}, key: nested(900)}
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="j", schedule="0 3 * * *", action="query", query="q", **keys)
    assert refused.value.field == key
    assert store.jobs() == []
