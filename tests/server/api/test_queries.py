"""Saved queries over the API: list, define, drop."""

from __future__ import annotations

from fastapi.testclient import TestClient
from server.apikit import define

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
