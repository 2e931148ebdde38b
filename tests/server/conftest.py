"""A store, a host (ticked by hand), tokens and an API client, on SQLite in a temp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import Busy
from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.store import Store

START = "2026-06-01T10:00:30+02:00"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(at(START))


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> Iterator[Store]:
    opened = Store.open(tmp_path / "dgxmm.db", clock=clock)
    with opened.engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, label TEXT NOT NULL)"
        )
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()


@pytest.fixture
def host(store: Store, clock: ManualClock) -> Iterator[Host]:
    made = Host(store, time_zone="Europe/Berlin", clock=clock, stop_grace_seconds=5)
    made.tick()  # the first tick only plans
    yield made
    made.stop()


@pytest.fixture
def tokens(store: Store) -> Tokens:
    return Tokens(store.engine, store.clock)


@pytest.fixture
def admin_token(tokens: Tokens) -> str:
    return tokens.create(Role.ADMIN, "alice")


@pytest.fixture
def viewer_token(tokens: Tokens) -> str:
    return tokens.create(Role.VIEWER, "victor")


@pytest.fixture
def client(host: Host, tokens: Tokens, admin_token: str) -> Iterator[TestClient]:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as made:
        made.headers["Authorization"] = f"Bearer {admin_token}"
        yield made


@pytest.fixture
def viewer(host: Host, tokens: Tokens, viewer_token: str) -> Iterator[TestClient]:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as made:
        made.headers["Authorization"] = f"Bearer {viewer_token}"
        yield made
