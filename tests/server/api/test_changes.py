"""GET /api/changes: a page's cheap "what changed since" poll."""

from __future__ import annotations

from fastapi.testclient import TestClient

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
