"""GET /api/changes: a page's cheap "what changed since" poll."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import event

from dgxmm.server import Host


def version(client: TestClient, since: str | None = None) -> dict[str, object]:
    query = {"topics": "jobs"} | ({"since": since} if since else {})
    answer = client.get("/api/changes", params=query)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


def test_it_says_unchanged_until_a_job_runs(client: TestClient, host: Host) -> None:
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    first = version(client)
    assert first["changed"] is True  # nothing seen yet
    again = version(client, str(first["version"]))
    assert again == {**first, "changed": False}
    host.run_now("cp")
    after = version(client, str(first["version"]))
    assert after["changed"] is True
    assert after["version"] != first["version"]


def test_it_refuses_a_topic_it_does_not_know(client: TestClient) -> None:
    answer = client.get("/api/changes", params={"topics": "jobs,nope"})
    assert answer.status_code == 400
    assert answer.json()["field"] == "topics"
    assert "'nope' is not one of jobs, deployments, insights" in answer.json()["message"]


def test_it_needs_a_token(client: TestClient) -> None:
    del client.headers["Authorization"]
    assert client.get("/api/changes").status_code == 401


def test_it_answers_from_the_counters_with_one_query_whatever_the_jobs(
    client: TestClient, host: Host
) -> None:
    for i in range(30):
        host.store.define_job(name=f"cp{i}", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(host.store.engine, "before_cursor_execute", count)
    try:
        version(client)
    finally:
        event.remove(host.store.engine, "before_cursor_execute", count)
    queries = [s for s in statements if not s.startswith(("BEGIN", "COMMIT", "ROLLBACK"))]
    others = [s for s in queries if "api_tokens" not in s]  # but the viewer's token
    assert len(others) == 1
    assert "change_versions" in others[0]


def test_it_says_changed_after_a_define_on_the_store(client: TestClient, host: Host) -> None:
    first = version(client)
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    after = version(client, str(first["version"]))
    assert after["changed"] is True
