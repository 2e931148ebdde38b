"""A failed run's error: admins read all of it, viewers only what carries no value read."""

from __future__ import annotations

from fastapi.testclient import TestClient

from dgxmm.store import Store


def test_viewers_see_the_kind_and_statement_admins_the_whole(
    client: TestClient, viewer: TestClient, store: Store
) -> None:
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO notes (label) VALUES ('hunter2')")
    body = "SELECT json_extract('{}', (SELECT group_concat(label) FROM notes))"
    assert (
        client.post("/api/queries/define", json={"name": "leak", "body": body}).status_code == 200
    )
    job = {"name": "leak", "schedule": "0 3 * * *", "action": "query", "query": "leak"}
    assert client.post("/api/jobs/define", json=job).status_code == 200
    ran = client.post("/api/jobs/run", json={"name": "leak"}).json()
    assert ran["outcome"] == "failed"
    assert "hunter2" in ran["error"]  # the admin who ran it reads the whole error

    def last_error(who: TestClient) -> str:
        rows = {row["name"]: row for row in who.get("/api/jobs").json()["jobs"]}
        error: str = rows["leak"]["last_run"]["error"]
        return error

    assert "hunter2" in last_error(client)
    assert last_error(viewer) == "StoreError: job leak: statement 1 failed"
    page = viewer.get("/jobs")
    assert page.status_code == 200
    assert "hunter2" not in page.text
    assert "statement 1 failed" in page.text


def test_arguments_nested_too_deep_answer_422_naming_the_body_and_change_nothing(
    client: TestClient, store: Store
) -> None:
    deep: object = 1
    for _ in range(900):
        deep = [deep]
    job = {"name": "deep", "schedule": "0 3 * * *", "action": "query", "query": "q"}
    answer = client.post("/api/jobs/define", json={**job, "args": {"x": deep}})
    assert answer.status_code == 422, answer.text  # it answered 500 (pydantic's serializer)
    assert (answer.json()["error"], answer.json()["field"]) == ("invalid_request", "body")
    assert [j.name for j in store.jobs()] == []
