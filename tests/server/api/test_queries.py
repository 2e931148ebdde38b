"""Saved queries over the API: list, define, drop."""

from __future__ import annotations

from fastapi.testclient import TestClient
from server.apikit import define

from dgxmm.jobs import Channel, Tier
from dgxmm.store import Store


def test_it_defines_lists_and_drops_a_query(client: TestClient, store: Store) -> None:
    response = client.post(
        "/api/queries/define",
        json={
            "name": "recent",
            "params": {"n": "int"},
            "body": "SELECT * FROM notes LIMIT :n",
            "description": "the latest notes",
        },
    )
    assert response.status_code == 200, response.text
    (query,) = client.get("/api/queries").json()["queries"]
    assert (query["name"], query["params"], query["description"]) == (
        "recent",
        {"n": "int"},
        "the latest notes",
    )
    assert query["defined_by"] == "user:alice"
    assert client.post("/api/queries/drop", json={"name": "recent"}).status_code == 200
    assert store.queries() == []


def test_it_refuses_a_bad_query_naming_the_field(client: TestClient, store: Store) -> None:
    cases = [
        ({"name": "q", "params": {"n": "decimal"}, "body": "SELECT :n"}, "params"),
        ({"name": "q", "params": {}, "body": "DROP TABLE notes"}, "body"),
        ({"name": "q", "params": {}, "body": "SELEC 1"}, "body"),
        ({"name": "q", "params": {}, "body": "SELECT :undeclared"}, "params"),
    ]
    for body, field in cases:
        response = client.post("/api/queries/define", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["field"] == field, body
    assert store.queries() == []


def test_it_refuses_to_drop_a_query_a_job_uses_naming_the_job(client: TestClient) -> None:
    client.post("/api/queries/define", json={"name": "q", "params": {}, "body": "SELECT 1"})
    define(client, name="uses_q", schedule="0 3 * * *", action="query", query="q")
    response = client.post("/api/queries/drop", json={"name": "q"})
    assert response.status_code == 409
    assert "uses_q" in response.json()["message"]
    assert client.post("/api/queries/drop", json={"name": "ghost"}).status_code == 404


def test_it_refuses_runs_of_a_job_whose_query_now_writes_more(client: TestClient) -> None:
    client.post("/api/queries/define", json={"name": "q", "params": {}, "body": "SELECT 1"})
    define(client, name="reader", schedule="0 3 * * *", action="query", query="q")
    client.post(
        "/api/queries/define", json={"name": "q", "params": {}, "body": "DELETE FROM notes"}
    )
    result = client.post("/api/jobs/run", json={"name": "reader"}).json()
    assert result["outcome"] == "failed"
    assert "notes" in result["error"]


def _channel_count(store: Store, channel: str) -> tuple[int, int]:
    buckets = store.workload_stats.channel_history(Channel(channel), Tier.DAYS)
    return sum(b.count for b in buckets), sum(b.failures for b in buckets)


def test_it_runs_a_reading_query_and_counts_it_per_channel(
    client: TestClient, store: Store
) -> None:
    store.define_query("labels", {"n": "int"}, "SELECT label FROM notes LIMIT :n")
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO notes (label) VALUES ('a'), ('b')")
    response = client.post("/api/queries/run", json={"name": "labels", "args": {"n": 5}})
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == "succeeded"
    assert response.json()["detail"] == "1 statement; 0 rows changed; 2 rows returned"
    client.post("/api/queries/run", json={"name": "labels", "args": {"n": 1}, "channel": "cli"})
    store.run_query("labels", {"n": 1}, channel=Channel.CLI)
    assert _channel_count(store, "api") == (1, 0)
    assert _channel_count(store, "cli") == (2, 0)
    page = client.get("/workload?tier=minutes").text
    assert '<tr data-channel="api"><td>api</td><td class="count">1</td>' in page
    assert '<tr data-channel="cli"><td>cli</td><td class="count">2</td>' in page


def test_it_refuses_to_run_a_writing_query_and_counts_nothing(
    client: TestClient, store: Store
) -> None:
    store.define_query("add", {"label": "string"}, "INSERT INTO notes (label) VALUES (:label)")
    response = client.post("/api/queries/run", json={"name": "add", "args": {"label": "x"}})
    assert response.status_code == 400
    assert response.json()["field"] == "name"
    assert "define a job" in response.json()["message"]
    wrong = client.post("/api/queries/run", json={"name": "add", "args": {}})
    assert wrong.status_code == 400
    assert client.post("/api/queries/run", json={"name": "nope"}).status_code == 404
    assert _channel_count(store, "api") == (0, 0)
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM notes").scalar() == 0


def test_it_counts_a_query_jobs_run_and_a_failed_query_under_their_channels(
    client: TestClient, store: Store
) -> None:
    store.define_query("count", None, "SELECT count(*) FROM notes")
    store.define_query("broken", None, "SELECT CAST('x' AS INTEGER) / 0 FROM notes_gone")
    define(client, name="counter", schedule="0 3 * * *", action="query", query="count")
    assert client.post("/api/jobs/run", json={"name": "counter"}).json()["outcome"] == "succeeded"
    assert _channel_count(store, "job") == (1, 0)
    failed = client.post("/api/queries/run", json={"name": "broken"})
    assert failed.status_code == 200, failed.text
    assert (failed.json()["outcome"], failed.json()["detail"]) == ("failed", None)
    assert "statement 1" in failed.json()["error"]
    assert _channel_count(store, "api") == (1, 1)
