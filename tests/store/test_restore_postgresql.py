"""A restore into PostgreSQL writes only a new, empty, ordinary database it can reach.

Template databases, the maintenance database, the live database and a database holding a
table in any schema are refused with a ``Conflict`` naming ``target``, and nothing is
created; a database that cannot be reached, or a URL of no known kind, is an
``InvalidInput`` naming ``target``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import PgCluster
from store.storekit import make_items
from support import free_port

from dgxmm.errors import Conflict, InvalidInput
from dgxmm.store import Store, restore

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path) -> Iterator[Store]:
    store = Store.open(pg_url, data_dir=tmp_path / "data")
    try:
        make_items(store)
        yield store
    finally:
        store.close()


@pytest.fixture
def backup(pg_store: Store, tmp_path: Path) -> Path:
    pg_store.backup(tmp_path / "bk")
    return tmp_path / "bk"


def user_tables(cluster: PgCluster, database: str) -> list[str]:
    with cluster.connect(database) as connection:
        found = connection.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1"
        ).fetchall()
    return [str(row[0]) for row in found]


@pytest.mark.parametrize("database", ["template1", "template0", "postgres"])
def test_it_refuses_the_clusters_own_databases(
    pg_store: Store, backup: Path, pg_cluster: PgCluster, database: str
) -> None:
    with pytest.raises(Conflict, match=database) as refused:
        pg_store.restore(backup, pg_cluster.url(database))
    assert refused.value.field == "target"
    assert user_tables(pg_cluster, "postgres") == []
    fresh = pg_cluster.create_database()  # made from template1: it holds nothing of ours
    try:
        assert user_tables(pg_cluster, fresh) == []
    finally:
        pg_cluster.drop_database(fresh)


def test_it_refuses_any_template_database(
    pg_store: Store, backup: Path, pg_cluster: PgCluster
) -> None:
    name = pg_cluster.create_database()
    with pg_cluster.connect() as connection:
        connection.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true')
    try:
        with pytest.raises(Conflict, match="template") as refused:
            pg_store.restore(backup, pg_cluster.url(name))
        assert refused.value.field == "target"
        assert user_tables(pg_cluster, name) == []
    finally:
        with pg_cluster.connect() as connection:
            connection.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
        pg_cluster.drop_database(name)


def test_it_refuses_the_live_database(pg_store: Store, backup: Path, pg_url: str) -> None:
    with pytest.raises(Conflict, match="live database") as refused:
        pg_store.restore(backup, pg_url)
    assert refused.value.field == "target"


def test_it_refuses_a_database_whose_tables_are_all_in_another_schema(
    pg_store: Store, backup: Path, pg_cluster: PgCluster
) -> None:
    name = pg_cluster.create_database()
    try:
        with pg_cluster.connect(name) as connection:
            connection.execute("CREATE SCHEMA app")
            connection.execute("CREATE TABLE app.precious (id integer)")
        with pytest.raises(Conflict, match=re.escape("app.precious")) as refused:
            restore(backup, pg_cluster.url(name))
        assert refused.value.field == "target"
        assert user_tables(pg_cluster, name) == ["app.precious"]
    finally:
        pg_cluster.drop_database(name)


def test_it_names_the_target_when_it_cannot_reach_the_database(
    pg_store: Store, backup: Path, pg_cluster: PgCluster
) -> None:
    for unreachable in [
        pg_cluster.url("no_such_database"),
        f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/db?connect_timeout=5",
    ]:
        with pytest.raises(InvalidInput, match="cannot connect") as refused:
            pg_store.restore(backup, unreachable)
        assert refused.value.field == "target", unreachable


@pytest.mark.parametrize(
    "url",
    [
        "mysql://u@localhost/db",
        "postgresql+asyncpg://u@localhost/db",
        "postgresql://u@localhost:notaport/db",
        "postgresql://u@localhost",
        "http://example.invalid/x",
    ],
)
def test_it_refuses_a_url_it_cannot_use_naming_the_target(
    pg_store: Store, backup: Path, url: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        pg_store.restore(backup, url)
    assert refused.value.field == "target"


def test_it_reads_postgres_urls_as_postgresql(
    pg_store: Store, backup: Path, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    name = pg_cluster.create_database()
    try:
        url = pg_cluster.url(name).replace("postgresql+psycopg://", "postgres://")
        result = pg_store.restore(backup, url)
        assert result.items >= 2
        assert "public.items" in user_tables(pg_cluster, name)
        opened = Store.open(url, data_dir=tmp_path / "restored-data")
        opened.close()
    finally:
        pg_cluster.drop_database(name)


def test_it_backs_up_tables_of_every_schema_whatever_their_names(
    pg_store: Store, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    with pg_store.engine.begin() as connection:
        connection.exec_driver_sql("CREATE SCHEMA app")
        connection.exec_driver_sql('CREATE TABLE "we/ird" (items text)')  # no primary key
        connection.exec_driver_sql("INSERT INTO \"we/ird\" VALUES ('b'), ('a'), ('a')")
        connection.exec_driver_sql("CREATE TABLE app.items (id serial PRIMARY KEY, label text)")
        connection.exec_driver_sql("INSERT INTO app.items (label) VALUES ('one'), ('two')")
    pg_store.backup(tmp_path / "bk")
    files = sorted(p.name for p in (tmp_path / "bk" / "000001").iterdir())
    assert "app.items.copy" in files
    assert all("/" not in name and not name.startswith('"') for name in files)
    name = pg_cluster.create_database()
    try:
        restore(tmp_path / "bk", pg_cluster.url(name))
        with pg_cluster.connect(name) as connection:
            assert connection.execute('SELECT items FROM "we/ird" ORDER BY 1').fetchall() == [
                ("a",),
                ("a",),
                ("b",),
            ]
            connection.execute("INSERT INTO app.items (label) VALUES ('three')")
            assert connection.execute("SELECT max(id) FROM app.items").fetchall() == [(3,)]
    finally:
        pg_cluster.drop_database(name)
