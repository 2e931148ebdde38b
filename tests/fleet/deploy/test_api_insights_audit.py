"""The insights and audit APIs, and the metrics jobs as the host runs them."""

from __future__ import annotations

from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet, InsightKind, Severity
from dgxmm.jobs import Outcome
from dgxmm.server import Host


def test_it_lists_and_dismisses_insights(
    client: TestClient, viewer: TestClient, fleet: Fleet
) -> None:
    llama = fleet.deployments.create(actor="user:alice", **standin("llama"))
    raised = fleet.insights.raise_insight(
        InsightKind.DEPLOYMENT_FAILED,
        deployment_id=llama.id,
        severity=Severity.CRITICAL,
        message="it failed",
    )
    assert raised is not None
    [shown] = viewer.get("/api/insights").json()["insights"]
    assert (shown["id"], shown["deployment"], shown["severity"]) == (raised.id, "llama", "critical")
    assert viewer.post(f"/api/insights/{raised.id}/dismiss").status_code == 403
    dismissed = client.post(f"/api/insights/{raised.id}/dismiss").json()
    assert dismissed["dismissed_by"] == "user:alice"
    assert viewer.get("/api/insights").json()["insights"] == []
    assert len(viewer.get("/api/insights?include_dismissed=true").json()["insights"]) == 1
    assert client.post("/api/insights/999/dismiss").status_code == 404


def test_the_audit_is_for_admins(client: TestClient, viewer: TestClient) -> None:
    client.post("/api/deployments", json=standin("llama"))
    assert viewer.get("/api/audit").status_code == 403
    [row] = client.get("/api/audit").json()["audit"]
    assert (row["action"], row["actor"], row["subject"]) == (
        "deployment.create",
        "user:alice",
        "deployment",
    )
    assert client.get("/api/audit?actor=user:bob").json()["audit"] == []


def test_the_host_runs_the_metrics_jobs(host: Host, fleet: Fleet) -> None:
    llama = fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployer.start(llama.id, actor="user:alice")
    result = host.run_now("metrics_rollup", timeout=60)
    assert (result.outcome, result.detail) == (Outcome.SUCCEEDED, "1 sampled")
    assert len(fleet.metrics.rollups(llama.id, 0, 2**62)) == 1
    purged = host.run_now("metrics_purge", timeout=60)
    assert (purged.outcome, purged.detail) == (
        Outcome.SUCCEEDED,
        "0 rollups and 0 minutes of proxy requests deleted",
    )
