"""The store's contract suite runs every test on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import PgCluster
from store.storekit import Place
from support import at, copy_migrated

from dgxmm.clock import ManualClock
from dgxmm.store import Store


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """Where the test's store lives: a SQLite file, or a fresh PostgreSQL database.

    For a test that takes ``store``, a new database migrated already (a copy of the session's
    template: what ``Store.open`` makes of a new one); for the others, no file yet or an empty
    database, which the test opens itself."""
    data_dir = tmp_path / "data"
    migrated = "store" in request.fixturenames
    if request.param == "sqlite":
        target = data_dir / "store.db"
        if migrated:
            copy_migrated(request.getfixturevalue("migrated_template"), target)
        return Place(target=str(target), data_dir=data_dir, dialect="sqlite")
    url = request.getfixturevalue("pg_store_url" if migrated else "pg_url")
    return Place(target=url, data_dir=data_dir, dialect="postgresql")


@pytest.fixture
def restore_target(place: Place, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A new place to restore into: a file path, or an empty PostgreSQL database."""
    if place.dialect == "sqlite":
        yield str(tmp_path / "restored" / "store.db")
        return
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    name = cluster.create_database()
    try:
        yield cluster.url(name)
    finally:
        cluster.drop_database(name)


@pytest.fixture
def clock() -> ManualClock:
    """The stores' clock."""
    return ManualClock(at("2026-03-02T10:00:00+00:00"))


@pytest.fixture
def open_store(place: Place, clock: ManualClock) -> Iterator[Callable[..., Store]]:
    """Open (or reopen) the test's store; every store opened is closed after the test."""
    opened: list[Store] = []

    def open_it(**options: Any) -> Store:
        options.setdefault("clock", clock)
        options.setdefault("data_dir", place.data_dir)
        store = Store.open(place.target, **options)
        opened.append(store)
        return store

    yield open_it
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[..., Store]) -> Store:
    """An open store."""
    return open_store()
