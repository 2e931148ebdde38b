"""Store operations over the API, and 409 while a user job runs."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from pg_cluster import PgCluster
from server.apikit import define
from support import free_port

from dgxmm.clock import ManualClock
from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.store import Store


def test_it_checkpoints_backs_up_restores_and_compacts(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    assert client.get("/api/store").json()["dialect"] == "sqlite"
    assert client.post("/api/store/checkpoint").status_code == 200
    first = client.post("/api/store/backup", json={"directory": str(tmp_path / "b")}).json()
    assert (first["sequence"], first["method"]) == (1, "full")
    second = client.post("/api/store/backup", json={"directory": str(tmp_path / "b")}).json()
    assert second["sequence"] == 2
    assert second["bytes_written"] < first["bytes_written"]
    restored = client.post(
        "/api/store/restore",
        json={"directory": str(tmp_path / "b"), "target": str(tmp_path / "r.db")},
    )
    assert restored.status_code == 200, restored.text
    assert (tmp_path / "r.db").exists()
    assert client.post("/api/store/compact").status_code == 200


def test_it_refuses_restoring_over_itself_and_a_missing_backup(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    client.post("/api/store/backup", json={"directory": str(tmp_path / "b")})
    over = client.post(
        "/api/store/restore", json={"directory": str(tmp_path / "b"), "target": str(store.path)}
    )
    assert over.status_code == 409
    missing = client.post(
        "/api/store/restore",
        json={"directory": str(tmp_path / "nothing"), "target": str(tmp_path / "r.db")},
    )
    assert missing.status_code in (400, 404, 422)
    assert not (tmp_path / "r.db").exists()


def test_a_restore_names_every_wrong_field_at_once(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    # Issue 31, defect 3: a missing backup and a taken target were told one at a time, and
    # the missing backup (a 422 of a damaged backup) named no field at all.
    missing = client.post(
        "/api/store/restore",
        json={"directory": str(tmp_path / "nothing"), "target": str(tmp_path / "r.db")},
    )
    assert missing.status_code == 400, missing.text
    assert missing.json()["field"] == "directory"
    assert "holds no dgxmm backup" in missing.json()["message"]
    both = client.post(
        "/api/store/restore",
        json={"directory": str(tmp_path / "nothing"), "target": str(store.path)},
    )
    assert both.status_code == 400, both.text
    assert [e["field"] for e in both.json()["errors"]] == ["directory", "target"]
    assert "is the store's database" in both.json()["errors"][1]["message"]
    assert not (tmp_path / "r.db").exists()


def test_it_answers_409_and_changes_nothing_while_a_user_job_runs(
    client: TestClient, host: Host, tmp_path: Path
) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "add", "params": {}, "body": "INSERT INTO notes (label) VALUES ('x')"},
    )
    define(client, name="slow", schedule="0 3 * * *", action="query", query="add")
    define(client, name="gone", schedule="0 3 * * *", action="checkpoint")
    client.post("/api/jobs/drop", json={"name": "gone"})
    version = client.get("/api/store").json()["catalog_version"]
    gate, inside = threading.Event(), threading.Event()
    job = host.scheduler.get("slow")

    def held(context: object) -> object:
        inside.set()
        assert gate.wait(timeout=30)
        return job.action(context)  # type: ignore[arg-type]

    def slow_store_run(context: object) -> object:
        # The store counts the run from its own entry; hold it inside the store's run.
        with host.store._running.run("slow"):
            return held(context)

    with host.lock:
        host.scheduler.replace(replace(job, action=slow_store_run))
    runner = threading.Thread(target=lambda: client.post("/api/jobs/run", json={"name": "slow"}))
    runner.start()
    try:
        assert inside.wait(timeout=30)
        for path, body in [
            ("/api/store/checkpoint", None),
            ("/api/store/compact", None),
            ("/api/store/backup", {"directory": str(tmp_path / "b")}),
            (
                "/api/store/restore",
                {"directory": str(tmp_path / "b"), "target": str(tmp_path / "r.db")},
            ),
            ("/api/store/rollback", {"version": 1}),
            ("/api/attic/restore", {"kind": "job", "name": "gone"}),
            ("/api/attic/remove", {"kind": "job", "name": "gone"}),
        ]:
            response = client.post(path, json=body) if body else client.post(path)
            assert response.status_code == 409, (path, response.text)
            assert "slow is running" in response.json()["message"]
        assert not (tmp_path / "b").exists()
        assert not (tmp_path / "r.db").exists()
        assert client.get("/api/store").json()["catalog_version"] == version
        assert [e["name"] for e in client.get("/api/attic").json()["attic"]] == ["gone"]
    finally:
        gate.set()
        runner.join(timeout=30)
    assert client.post("/api/store/checkpoint").status_code == 200


def test_it_needs_an_admin_for_operations(viewer: TestClient) -> None:
    assert viewer.get("/api/store").status_code == 200
    assert viewer.post("/api/store/checkpoint").status_code == 403


# -- restores that must not replace anything (issues 11 and 19) ------------------------------


def test_it_refuses_a_restore_over_the_live_database_through_a_missing_directory(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    assert client.post("/api/store/backup", json={"directory": "bk"}).status_code == 200
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO notes (label) VALUES ('after the backup')")
    response = client.post(
        "/api/store/restore", json={"directory": "bk", "target": "nosuchdir/../dgxmm.db"}
    )
    assert response.status_code == 409, response.text
    assert response.json()["field"] == "target"
    assert "the store's database" in response.json()["message"]
    assert not (tmp_path / "nosuchdir").exists()
    check = sqlite3.connect(tmp_path / "dgxmm.db")
    try:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert check.execute("SELECT label FROM notes").fetchall() == [("after the backup",)]
    finally:
        check.close()


def test_it_refuses_a_restore_over_any_existing_file_or_the_token_file(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    client.post("/api/store/backup", json={"directory": "bk"})
    (tmp_path / "victim.txt").write_text("precious")
    store.protect_paths([tmp_path / "admin-token"], what="the server's admin token")
    for target in ["missing/../victim.txt", str(tmp_path / "admin-token"), "dgxmm.db-journal"]:
        response = client.post("/api/store/restore", json={"directory": "bk", "target": target})
        assert response.status_code == 409, (target, response.text)
        assert response.json()["field"] == "target"
    assert (tmp_path / "victim.txt").read_text() == "precious"
    assert not (tmp_path / "missing").exists()
    assert not (tmp_path / "admin-token").exists()
    assert not (tmp_path / "dgxmm.db-journal").exists()


@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path, clock: ManualClock) -> Iterator[Store]:
    """A PostgreSQL store whose data directory is ``tmp_path / "data"``."""
    opened = Store.open(pg_url, data_dir=tmp_path / "data", clock=clock)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def pg_client(pg_store: Store, clock: ManualClock) -> Iterator[TestClient]:
    """An admin's client of a server on a PostgreSQL store."""
    host = Host(pg_store, time_zone="Europe/Berlin", clock=clock, stop_grace_seconds=5)
    tokens = Tokens(pg_store.engine, clock)
    try:
        with TestClient(create_app(Services(host=host, tokens=tokens))) as made:
            made.headers["Authorization"] = f"Bearer {tokens.create(Role.ADMIN, 'alice')}"
            yield made
    finally:
        host.stop()


def rows_of(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.exec_driver_sql(sql)]
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_it_backs_up_and_restores_a_table_of_another_schema_on_postgresql(
    pg_client: TestClient, pg_store: Store, pg_cluster: PgCluster
) -> None:
    with pg_store.engine.begin() as connection:
        connection.exec_driver_sql("CREATE SCHEMA app")
        connection.exec_driver_sql("CREATE TABLE app.items (id integer PRIMARY KEY, label text)")
        connection.exec_driver_sql(
            "INSERT INTO app.items SELECT i, 'row ' || i FROM generate_series(1, 100) AS i"
        )
    defined = client_define_query(pg_client, "INSERT INTO app.items VALUES (101, 'job')")
    assert defined.status_code == 200, defined.text
    job = define(pg_client, name="writer", schedule="0 3 * * *", action="query", query="add")
    assert job["effects"] == ["Execute(add)", "Write(app.items)"]
    ran = pg_client.post("/api/jobs/run", json={"name": "writer"})
    assert ran.json()["outcome"] == "succeeded", ran.text
    assert pg_client.post("/api/store/backup", json={"directory": "bk"}).status_code == 200
    name = pg_cluster.create_database()
    try:
        restored = pg_client.post(
            "/api/store/restore", json={"directory": "bk", "target": pg_cluster.url(name)}
        )
        assert restored.status_code == 200, restored.text
        count = "SELECT count(*) FROM app.items"
        assert rows_of(pg_cluster.url(name), count) == [(101,)]
    finally:
        pg_cluster.drop_database(name)


def client_define_query(client: TestClient, body: str) -> Any:
    return client.post("/api/queries/define", json={"name": "add", "params": {}, "body": body})


@pytest.mark.postgres
def test_it_refuses_file_targets_a_postgresql_server_was_not_told_are_files(
    pg_client: TestClient, tmp_path: Path
) -> None:
    other = Store.open(tmp_path / "other" / "store.db")  # a readable SQLite backup
    try:
        other.backup(tmp_path / "sqlite-bk")
    finally:
        other.close()
    data = tmp_path / "data"
    for victim in ("victim.txt", "victim2.txt"):
        (data / victim).write_text("precious")
    directory = str(tmp_path / "sqlite-bk")
    bare = pg_client.post(
        "/api/store/restore", json={"directory": directory, "target": "missing/../victim.txt"}
    )
    assert bare.status_code == 400, bare.text
    assert bare.json()["field"] == "target"
    told = pg_client.post(
        "/api/store/restore",
        json={"directory": directory, "target": f"sqlite:///{data}/missing2/../victim2.txt"},
    )
    assert told.status_code == 409, told.text
    assert told.json()["field"] == "target"
    assert [(data / v).read_text() for v in ("victim.txt", "victim2.txt")] == ["precious"] * 2
    assert not (data / "missing").exists()
    assert not (data / "missing2").exists()
    fine = pg_client.post(
        "/api/store/restore", json={"directory": directory, "target": f"sqlite:///{data}/new.db"}
    )
    assert fine.status_code == 200, fine.text


@pytest.mark.postgres
def test_it_refuses_databases_that_are_not_new_and_empty_with_409_naming_the_target(
    pg_client: TestClient, pg_cluster: PgCluster, pg_url: str
) -> None:
    assert pg_client.post("/api/store/backup", json={"directory": "bk"}).status_code == 200
    full = pg_cluster.create_database()
    try:
        with pg_cluster.connect(full) as connection:
            connection.execute("CREATE SCHEMA app")
            connection.execute("CREATE TABLE app.precious (id integer)")
        for target in [pg_cluster.url("template1"), pg_cluster.url("postgres"), pg_url]:
            response = pg_client.post(
                "/api/store/restore", json={"directory": "bk", "target": target}
            )
            assert response.status_code == 409, (target, response.text)
            assert response.json()["field"] == "target"
        response = pg_client.post(
            "/api/store/restore", json={"directory": "bk", "target": pg_cluster.url(full)}
        )
        assert response.status_code == 409, response.text
        assert "app.precious" in response.json()["message"]
        assert rows_of(pg_cluster.url(full), "SELECT count(*) FROM pg_tables "
                       "WHERE schemaname = 'public'") == [(0,)]  # fmt: skip
    finally:
        pg_cluster.drop_database(full)


@pytest.mark.postgres
def test_it_answers_4xx_naming_the_target_for_databases_it_cannot_reach(
    pg_client: TestClient, pg_cluster: PgCluster
) -> None:
    assert pg_client.post("/api/store/backup", json={"directory": "bk"}).status_code == 200
    for target in [
        pg_cluster.url("no_such_database"),
        f"postgresql://nobody@127.0.0.1:{free_port()}/db",
        "mysql://nobody@localhost/db",
    ]:
        response = pg_client.post("/api/store/restore", json={"directory": "bk", "target": target})
        assert response.status_code == 400, (target, response.text)
        assert response.json()["field"] == "target"
    fresh = pg_cluster.create_database()
    try:
        url = pg_cluster.url(fresh).replace("postgresql+psycopg://", "postgres://")
        response = pg_client.post("/api/store/restore", json={"directory": "bk", "target": url})
        assert response.status_code == 200, response.text
    finally:
        pg_cluster.drop_database(fresh)
