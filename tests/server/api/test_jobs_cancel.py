"""POST /api/jobs/runs/{id}/cancel: an admin cancels a run under way; the run is recorded
cancelled with who; a wrong id answers 400, an unknown one 404, one ended 409."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from support import at

from dgxmm.clock import ManualClock
from dgxmm.server import Host
from dgxmm.store import Store

ENDLESS = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c"


def start_endless(client: TestClient, host: Host, clock: ManualClock) -> int:
    client.post("/api/queries/define", json={"name": "endless", "body": ENDLESS})
    response = client.post(
        "/api/jobs/define",
        json={"name": "forever", "schedule": "* * * * *", "action": "query", "query": "endless"},
    )
    assert response.status_code == 200, response.text
    host.tick()  # plans it
    clock.set(at("2026-06-01T10:01:00+02:00"))
    host.tick()
    (run,) = client.get("/api/jobs/runs", params={"name": "forever"}).json()["runs"]
    assert run["outcome"] is None
    time.sleep(0.3)  # its statement is under way
    return int(run["id"])


def test_an_admin_cancels_a_run_under_way_and_it_is_recorded_with_who(
    client: TestClient, viewer: TestClient, host: Host, store: Store, clock: ManualClock
) -> None:
    run_id = start_endless(client, host, clock)
    refused = viewer.post(f"/api/jobs/runs/{run_id}/cancel")
    assert refused.status_code == 403
    answer = client.post(f"/api/jobs/runs/{run_id}/cancel")
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] == run_id
    host.wait_idle(10)
    row = client.get("/api/jobs/runs", params={"name": "forever"}).json()["runs"][0]
    assert (row["outcome"], row["cancelled_by"], row["error"]) == (
        "cancelled",
        "user:alice",
        "cancelled by user:alice",
    )
    again = client.post(f"/api/jobs/runs/{run_id}/cancel")
    assert again.status_code == 409
    assert "has ended: cancelled" in again.json()["message"]


def test_it_answers_a_wrong_id_400_and_an_unknown_one_404(client: TestClient) -> None:
    assert client.post("/api/jobs/runs/x1/cancel").status_code == 400
    assert client.post("/api/jobs/runs/x1/cancel").json()["field"] == "id"
    assert client.post("/api/jobs/runs/424242/cancel").status_code == 404
