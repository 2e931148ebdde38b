"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import pwd
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from pg_cluster import PgCluster, find_pg_bin
from support import StandinProcess, copy_migrated, migrate_template, need, new_store_id


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """A throwaway PostgreSQL cluster for the session (skipped, or failed in CI, when missing)."""
    bin_dir = find_pg_bin()
    need(bin_dir is not None, "PostgreSQL's initdb and pg_ctl are not installed")
    assert bin_dir is not None
    if os.geteuid() == 0:
        need(shutil.which("runuser") is not None, "runuser is needed to run PostgreSQL as root")
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            need(False, "the postgres user is needed to run PostgreSQL as root")
    cluster = PgCluster(bin_dir)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """The URL of a fresh, empty database on the session's cluster, dropped after the test."""
    name = pg_cluster.create_database()
    try:
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)


@pytest.fixture
def pg_store_url(pg_cluster: PgCluster, pg_template: str) -> Iterator[str]:
    """The URL of a fresh database, migrated: a copy of ``pg_template`` with its own store id.

    What ``Store.open`` makes of an empty database, without running every migration again."""
    name = pg_cluster.create_database(template=pg_template)
    try:
        with pg_cluster.connect(name) as conn:
            conn.execute("UPDATE store_state SET store_id = %s", (new_store_id(),))
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)


@pytest.fixture(scope="session")
def pg_template(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database of the session's cluster, migrated once, that ``pg_store_url`` copies."""
    name = pg_cluster.create_database()
    migrate_template(pg_cluster.url(name), tmp_path_factory.mktemp("pg-template"))
    return name


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated once per session (per xdist worker), for ``fresh_db``."""
    path = tmp_path_factory.mktemp("migrated") / "template.db"
    migrate_template(path)
    return path


@pytest.fixture
def fresh_db(tmp_path: Path, migrated_template: Path) -> Path:
    """``tmp_path / "dgxmm.db"``: a new SQLite database, migrated (a copy of the template)."""
    return copy_migrated(migrated_template, tmp_path / "dgxmm.db")


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Callable[..., StandinProcess]]:
    """Start stand-ins with extra arguments; every one is killed after the test."""
    started: list[StandinProcess] = []

    def start(*args: str, model: str = "standin-model") -> StandinProcess:
        process = StandinProcess(tmp_path, *args, model=model)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


# Under pytest-xdist (``scripts/test`` runs ``-n 4 --dist loadgroup``) each worker is a
# session of its own, with its own session fixtures. A Ray cluster and a browser are heavy,
# and two Ray clusters on one machine share Ray's temporary directory: so every test that uses
# one runs on the same worker, which starts it once. PostgreSQL clusters are cheap (one per
# worker, each in a directory of its own).
_GROUPS = {"local_ray": "ray", "ray_cluster": "ray", "browser": "browser"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        group = next((g for fixture, g in _GROUPS.items() if fixture in names), None)
        if group is None and item.get_closest_marker("ray") is not None:
            group = "ray"  # starts a cluster of its own (``serve --demo --ray``)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # The longest work first: xdist hands out work in this order, so a group or a slow test
    # collected last (the lab's fidelity run alone is two minutes) ran while the other worker
    # sat idle at the end of the run. Stable: the order within each part stays as it was.
    items.sort(key=lambda item: not _is_long(item))


def _is_long(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in ("slow", "xdist_group"))


# Machines here are shared and noisy: how long an example takes is not what any property
# test asserts, so no deadline.
settings.register_profile("dgxmm", deadline=None)
settings.load_profile("dgxmm")
