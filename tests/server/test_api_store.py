"""Store operations over the API, and 409 while a user job runs."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from apikit import define
from fastapi.testclient import TestClient

from dgxmm.server import Host
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


def test_it_answers_409_and_changes_nothing_while_a_user_job_runs(
    client: TestClient, host: Host, tmp_path: Path
) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "add", "params": {}, "body": "INSERT INTO notes (label) VALUES ('x')"},
    )
    define(client, name="slow", schedule="0 3 * * *", action="query", query="add")
    gate, inside = threading.Event(), threading.Event()
    job = host.scheduler.get("slow")

    def held(context: object) -> object:
        inside.set()
        assert gate.wait(timeout=30)
        return job.action(context)  # type: ignore[arg-type]

    def slow_store_run(context: object) -> object:
        # The store counts the run from its own entry; hold it inside the store's run.
        with host.store._user_run("slow"):
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
        ]:
            response = client.post(path, json=body) if body else client.post(path)
            assert response.status_code == 409, (path, response.text)
            assert "slow is running" in response.json()["message"]
        assert not (tmp_path / "b").exists()
        assert not (tmp_path / "r.db").exists()
    finally:
        gate.set()
        runner.join(timeout=30)
    assert client.post("/api/store/checkpoint").status_code == 200


def test_it_needs_an_admin_for_operations(viewer: TestClient) -> None:
    assert viewer.get("/api/store").status_code == 200
    assert viewer.post("/api/store/checkpoint").status_code == 403
