"""GET /api/deployments, /api/insights and /api/audit a page at a time: every item once."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet, InsightKind, Severity


def walk(client: TestClient, path: str, key: str, limit: int, **params: Any) -> list[Any]:
    """Follow next_cursor from the first page to the last; return every item's id."""
    seen: list[Any] = []
    cursor = None
    while True:
        query = {"limit": limit, **params} | ({"cursor": cursor} if cursor else {})
        answer = client.get(path, params=query)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body[key]) <= limit
        seen.extend(item["id"] for item in body[key])
        cursor = body["next_cursor"]
        if cursor is None:
            return seen


def test_deployments_page_by_name_each_once_while_one_is_added(
    client: TestClient, fleet: Fleet
) -> None:
    made = {fleet.deployments.create(actor="user:alice", **standin(n)).id for n in "bdfhj"}
    first = client.get("/api/deployments", params={"limit": 2}).json()
    assert [d["name"] for d in first["deployments"]] == ["b", "d"]
    assert "gpus" in first  # the GPUs stay beside the list
    fleet.deployments.create(actor="user:alice", **standin("a"))  # behind the cursor
    rest = walk(client, "/api/deployments", "deployments", 2, cursor=first["next_cursor"])
    seen = [d["id"] for d in first["deployments"]] + rest
    assert sorted(seen) == sorted(made)  # each once; "a" came behind the cursor
    assert len(client.get("/api/deployments").json()["deployments"]) == 6  # 100 by default


def test_deployments_filter_by_state_and_node(client: TestClient, fleet: Fleet) -> None:
    fleet.deployments.create(actor="user:alice", **standin("llama"))
    listed = client.get("/api/deployments", params={"state": "stopped", "node": "local"}).json()
    assert [d["name"] for d in listed["deployments"]] == ["llama"]
    assert client.get("/api/deployments", params={"state": "running"}).json()["deployments"] == []
    assert client.get("/api/deployments", params={"node": "abc"}).json()["deployments"] == []


def test_insights_and_audit_page_newest_first_each_once(client: TestClient, fleet: Fleet) -> None:
    ids = []
    for name in "abcde":
        made = fleet.deployments.create(actor="user:alice", **standin(name))
        raised = fleet.insights.raise_insight(
            InsightKind.DEPLOYMENT_FAILED, deployment_id=made.id,
            severity=Severity.WARNING, message=f"{name} failed",
        )  # fmt: skip
        assert raised is not None
        ids.append(raised.id)
    assert walk(client, "/api/insights", "insights", 2) == sorted(ids, reverse=True)
    audit = walk(client, "/api/audit", "audit", 2, action="deployment.create")
    assert len(audit) == len(set(audit)) == 5
    assert audit == sorted(audit, reverse=True)


def test_audit_filters_by_actor_subject_and_time(client: TestClient, fleet: Fleet) -> None:
    fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployments.create(actor="user:bob", **standin("other"))
    by_bob = client.get("/api/audit", params={"actor": "user:bob"}).json()["audit"]
    assert [row["actor"] for row in by_bob] == ["user:bob"]
    about = client.get("/api/audit", params={"subject": "deployment"}).json()["audit"]
    assert len(about) == 2
    now = client.get("/api/jobs").json()["now"]
    assert client.get("/api/audit", params={"until": now}).json()["audit"] == []
    assert len(client.get("/api/audit", params={"since": now}).json()["audit"]) == 2


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/deployments", {"limit": "0"}, "limit"),
        ("/api/deployments", {"state": "dancing"}, "state"),
        ("/api/deployments", {"cursor": "MQ"}, "cursor"),
        ("/api/insights", {"limit": "1001"}, "limit"),
        ("/api/insights", {"cursor": "bad"}, "cursor"),
        ("/api/audit", {"since": "yesterday"}, "since"),
        ("/api/audit", {"subject": "planet"}, "subject"),
    ],
    ids=["dep-limit", "dep-state", "dep-cursor", "ins-limit", "ins-cursor", "audit-since",
         "audit-subject"],
)  # fmt: skip
def test_it_refuses_bad_parameters_naming_them(
    client: TestClient, path: str, params: dict[str, str], field: str
) -> None:
    answer = client.get(path, params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/deployments", {"limit", "cursor", "state", "node"}),
        ("/api/insights", {"limit", "cursor", "include_dismissed", "deployment_id"}),
        ("/api/audit", {"limit", "cursor", "actor", "subject", "since", "until"}),
    ],
    ids=["deployments", "insights", "audit"],
)
def test_the_openapi_document_lists_every_parameter(
    client: TestClient, path: str, expected: set[str]
) -> None:
    operation = client.get("/openapi.json").json()["paths"][path]["get"]
    assert expected <= {parameter["name"] for parameter in operation["parameters"]}
