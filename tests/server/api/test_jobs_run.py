"""POST /api/jobs/run: runs now, answers when finished; refused while it or its type runs."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient
from server.apikit import define
from sqlalchemy import text

from dgxmm.server import Host
from dgxmm.store import Store


def test_it_runs_a_query_job_now_and_answers_with_the_result(
    client: TestClient, store: Store
) -> None:
    client.post(
        "/api/queries/define",
        json={
            "name": "add",
            "params": {"label": "string"},
            "body": "INSERT INTO notes (label) VALUES (:label)",
        },
    )
    define(
        client, name="note", schedule="0 3 * * *", action="query", query="add", args={"label": "hi"}
    )
    response = client.post("/api/jobs/run", json={"name": "note"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["name"], body["outcome"], body["error"]) == ("note", "succeeded", None)
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT label FROM notes")).scalars().all() == ["hi"]
    row = next(job for job in client.get("/api/jobs").json()["jobs"] if job["name"] == "note")
    assert row["last_run"]["outcome"] == "succeeded"
    assert row["running"] is False


def test_it_answers_a_failed_run_with_its_error(client: TestClient) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "boom", "params": {}, "body": "INSERT INTO notes (label) VALUES (NULL)"},
    )
    define(client, name="boom", schedule="0 3 * * *", action="query", query="boom")
    body = client.post("/api/jobs/run", json={"name": "boom"}).json()
    assert body["outcome"] == "failed"
    assert "NOT NULL" in body["error"]


def test_it_runs_a_system_job_now(client: TestClient) -> None:
    body = client.post("/api/jobs/run", json={"name": "stats_flush"}).json()
    assert body["outcome"] == "succeeded"


def test_it_refuses_while_the_job_or_a_job_of_its_type_runs(client: TestClient, host: Host) -> None:
    define(client, name="a", schedule="0 3 * * *", action="checkpoint")
    define(client, name="b", schedule="0 3 * * *", action="checkpoint")
    define(client, name="other", schedule="0 3 * * *", action="backup", path="backups/x")
    gate = threading.Event()
    holder = host.scheduler.get("a")
    # Hold job a in its run: its action waits until the test lets it go.
    blocked = holder.action

    def held(context: object) -> object:
        assert gate.wait(timeout=30)
        return blocked(context)  # type: ignore[arg-type]

    from dataclasses import replace

    with host.lock:
        host.scheduler.replace(replace(holder, action=held))
    runner = threading.Thread(target=lambda: client.post("/api/jobs/run", json={"name": "a"}))
    runner.start()
    try:
        for _ in range(200):
            if host.scheduler.running():
                break
            gate.wait(0.02)
        same = client.post("/api/jobs/run", json={"name": "a"})
        assert (same.status_code, same.json()["error"]) == (409, "busy")
        assert "job a is running" in same.json()["message"]
        kin = client.post("/api/jobs/run", json={"name": "b"})
        assert kin.status_code == 409
        assert "group checkpoint" in kin.json()["message"]
        # A job of another type runs beside it, and reads go on.
        assert client.post("/api/jobs/run", json={"name": "other"}).json()["outcome"] == "succeeded"
        assert client.get("/api/jobs").status_code == 200
    finally:
        gate.set()
        runner.join(timeout=30)


def test_it_refuses_an_unknown_job_and_one_it_does_not_run(client: TestClient) -> None:
    assert client.post("/api/jobs/run", json={"name": "ghost"}).status_code == 404
    define(client, name="mirror", schedule="0 3 * * *", action="checkpoint", run_on="replica")
    response = client.post("/api/jobs/run", json={"name": "mirror"})
    assert response.status_code == 409
    assert "not scheduled here" in response.json()["message"]
