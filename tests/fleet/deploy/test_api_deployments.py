"""The deployments API over a real app, with real stand-ins behind it."""

from __future__ import annotations

import sys
from typing import Any

from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet


def create(client: TestClient, **keys: Any) -> dict[str, Any]:
    response = client.post("/api/deployments", json=keys)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_it_creates_lists_and_reads_a_deployment(client: TestClient, viewer: TestClient) -> None:
    made = create(client, **standin("llama"))
    assert (made["state"], made["time_zone"], made["priority"]) == ("stopped", "Europe/Berlin", 50)
    listed = viewer.get("/api/deployments").json()
    assert [d["name"] for d in listed["deployments"]] == ["llama"]
    assert [(g["index"], g["memory_gib"], g["held_gib"]) for g in listed["gpus"]] == [
        (0, 80.0, 0.0),
        (1, 80.0, 0.0),
    ]
    assert viewer.get(f"/api/deployments/{made['id']}").json()["url"] == made["url"]


def test_it_answers_400_naming_a_field_it_refuses(client: TestClient) -> None:
    response = client.post("/api/deployments", json={**standin("llama"), "priority": 101})
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid",
        "field": "priority",
        "message": "101 is out of range 0-100",
        "errors": [{"field": "priority", "message": "101 is out of range 0-100"}],
    }
    external = {"name": "remote", "model": "m", "backend": "external"}
    missing = client.post("/api/deployments", json=external)
    assert (missing.status_code, missing.json()["field"]) == (400, "base_url")
    for field, value in (("sleep_timeout_s", 0), ("sleep_level", 0)):
        refused = client.post("/api/deployments", json={**standin("llama"), field: value})
        assert (refused.status_code, refused.json()["field"]) == (400, field)
    assert client.get("/api/deployments").json()["deployments"] == []


def test_it_lists_every_wrong_field_of_a_new_deployment_and_a_change(client: TestClient) -> None:
    keys = {**standin("llama"), "name": "probe y", "priority": 500, "time_zone": "Mars/Olympus"}
    del keys["model"]
    response = client.post("/api/deployments", json=keys)
    assert response.status_code == 400
    answer = response.json()
    assert [e["field"] for e in answer["errors"]] == ["model", "name", "priority", "time_zone"]
    assert (answer["field"], answer["message"]) == ("model", "is required")
    made = create(client, **standin("llama"))
    changed = client.patch(
        f"/api/deployments/{made['id']}",
        json={"priority": -1, "startup_timeout_s": -5, "memory_gib_awake": 900},
    )
    assert changed.status_code == 400
    fields = [e["field"] for e in changed.json()["errors"]]
    assert fields == ["memory_gib_awake", "priority", "startup_timeout_s"]


def test_it_takes_the_sleep_settings_and_refuses_a_new_level_while_asleep(
    client: TestClient,
) -> None:
    keys = {**standin("llama"), "sleep_timeout_s": 90, "sleep_level": 2}
    made = client.post("/api/deployments", json=keys).json()
    assert (made["sleep_timeout_s"], made["sleep_level"]) == (90.0, 2)
    path = f"/api/deployments/{made['id']}"
    assert client.patch(path, json={"sleep_level": 1}).json()["sleep_level"] == 1
    client.post(f"{path}/start")
    client.post(f"{path}/sleep")
    refused = client.patch(path, json={"sleep_level": 2})
    assert refused.status_code == 409
    assert "sleeps at level 1: wake it before changing sleep_level" in refused.json()["message"]
    assert client.get(path).json()["sleep_level"] == 1
    assert client.patch(path, json={"sleep_timeout_s": 30}).json()["sleep_timeout_s"] == 30.0
    client.post(f"{path}/stop")


def test_it_answers_422_for_a_wrong_type_or_an_unknown_field(client: TestClient) -> None:
    wrong = client.post("/api/deployments", json={**standin("llama"), "priority": "high"})
    assert (wrong.status_code, wrong.json()["field"]) == (422, "priority")
    quoted = client.post("/api/deployments", json={**standin("llama"), "port": "8000"})
    assert (quoted.status_code, quoted.json()["field"]) == (422, "port")
    unknown = client.post("/api/deployments", json={**standin("llama"), "replicas": 2})
    assert unknown.status_code == 422
    assert unknown.json()["message"] == "replicas is not a known field"
    action = client.post("/api/deployments/1/start", json={"plan": "no"})
    assert (action.status_code, action.json()["field"]) == (422, "plan")


def test_it_answers_404_409_and_403_where_they_belong(
    client: TestClient, viewer: TestClient
) -> None:
    assert client.get("/api/deployments/99").status_code == 404
    assert client.post("/api/deployments/99/start").status_code == 404
    made = create(client, **standin("llama"))
    taken = client.post("/api/deployments", json={**standin("llama")})
    assert (taken.status_code, taken.json()["error"]) == (409, "conflict")
    for method, path in [
        ("POST", f"/api/deployments/{made['id']}/start"),
        ("POST", f"/api/deployments/{made['id']}/stop"),
        ("PATCH", f"/api/deployments/{made['id']}"),
        ("DELETE", f"/api/deployments/{made['id']}"),
        ("POST", "/api/deployments"),
    ]:
        answer = viewer.request(method, path, json={})
        assert answer.status_code == 403, (method, path)
    assert client.post(f"/api/deployments/{made['id']}/sleep").status_code == 409


def test_it_starts_sleeps_wakes_and_stops_through_the_api(client: TestClient, fleet: Fleet) -> None:
    made = create(client, **standin("llama"))
    path = f"/api/deployments/{made['id']}"
    started = client.post(f"{path}/start").json()
    assert (started["outcome"], started["deployment"]["state"]) == ("done", "running")
    assert started["event"]["actor"] == "user:alice"
    assert client.post(f"{path}/sleep").json()["deployment"]["state"] == "sleeping"
    assert client.post(f"{path}/wake", json={"plan": False}).json()["deployment"]["state"] == (
        "running"
    )
    changed = client.patch(path, json={"priority": 90}).json()
    assert changed["priority"] == 90
    refused = client.patch(path, json={"port": 1234})
    assert refused.status_code == 409
    assert "stop it before changing port" in refused.json()["message"]
    assert client.post(f"{path}/stop").json()["deployment"]["state"] == "stopped"
    events = client.get(f"{path}/events").json()["events"]
    assert [e["action"] for e in events] == ["stop", "update", "wake", "sleep", "start", "create"]
    assert events[0]["at"].endswith("+02:00")  # in the host's zone, Europe/Berlin in June


def test_a_start_that_does_not_fit_is_409_without_plans_and_evicts_with_them(
    client: TestClient,
) -> None:
    low = create(client, **standin("low", awake=50, priority=10))
    client.post(f"/api/deployments/{low['id']}/start")
    big = create(client, **standin("big", awake=50, priority=70))
    path = f"/api/deployments/{big['id']}"

    plan = client.get(f"{path}/plan").json()
    assert (plan["fits_now"], plan["feasible"]) == (False, True)
    assert [(e["name"], e["action"]) for e in plan["evictions"]] == [("low", "sleep")]

    refused = client.post(f"{path}/start?plan=false")
    assert refused.status_code == 409
    assert refused.json()["error"] == "conflict"
    assert "GPU 0 (H100, 80 GiB) has 30 GiB free" in refused.json()["message"]
    assert "20 GiB short" in refused.json()["message"]
    refused_body = client.post(f"{path}/start", json={"plan": False})
    assert refused_body.status_code == 409

    started = client.post(f"{path}/start", json={"plan": True}).json()
    assert started["deployment"]["state"] == "running"
    assert [(e["deployment"]["name"], e["action"]) for e in started["evictions"]] == [
        ("low", "sleep")
    ]


def test_a_backend_failure_is_502(client: TestClient) -> None:
    keys = {**standin("broken"), "command": ["/nonexistent/vllm", "serve"]}
    made = create(client, **keys)
    failed = client.post(f"/api/deployments/{made['id']}/start")
    assert failed.status_code == 502
    assert failed.json()["error"] == "backend"
    assert "cannot run '/nonexistent/vllm'" in failed.json()["message"]
    assert client.get(f"/api/deployments/{made['id']}").json()["state"] == "failed"
    exits = {**standin("exits"), "command": [sys.executable, "-c", "raise SystemExit(2)"]}
    gone = create(client, **exits)
    assert client.post(f"/api/deployments/{gone['id']}/start").status_code == 502


def test_it_removes_a_deployment(client: TestClient, fleet: Fleet) -> None:
    made = create(client, **standin("llama"))
    client.post(f"/api/deployments/{made['id']}/start")
    removed = client.delete(f"/api/deployments/{made['id']}")
    assert removed.json() == {"removed": made["id"], "name": "llama"}
    assert client.get(f"/api/deployments/{made['id']}").status_code == 404
    assert fleet.deployments.list() == []


def test_it_serves_rollups_from_the_rollup_job(client: TestClient, fleet: Fleet) -> None:
    made = create(client, **standin("llama"))
    client.post(f"/api/deployments/{made['id']}/start")
    fleet.metrics.rollup_all()
    rollups = client.get(f"/api/deployments/{made['id']}/rollups").json()["rollups"]
    assert [(r["requests"], r["samples"]) for r in rollups] == [(0, 1)]


def test_openapi_lists_backends_and_audit_values(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["BackendKind"]["enum"] == ["process", "external", "ray"]
    assert "deployment.remove" in schemas["AuditAction"]["enum"]
    assert schemas["AuditSubject"]["enum"] == [
        "alert_channel",
        "alert_rule",
        "deployment",
        "insight",
        "proposal",
        "schedule",
        "setting",
    ]


def test_aliases_are_set_shown_and_an_alias_taken_is_409_naming_it(client: TestClient) -> None:
    made = create(client, **standin("llama"), aliases=["llama-fast", "chat"])
    assert made["aliases"] == ["llama-fast", "chat"]
    other = create(client, **standin("other"))
    taken = client.patch(f"/api/deployments/{other['id']}", json={"aliases": ["x", "chat"]})
    assert taken.status_code == 409
    assert (taken.json()["field"], taken.json()["message"]) == (
        "aliases",
        "'chat' is an alias of deployment 'llama'",
    )
    model = client.post("/api/deployments", json={**standin("third", model="llama-fast")})
    assert (model.status_code, model.json()["field"], model.json()["message"]) == (
        409,
        "model",
        "'llama-fast' is an alias of deployment 'llama'",
    )
    listed = client.get("/api/deployments").json()["deployments"]
    assert [(d["name"], d["aliases"]) for d in listed] == [
        ("llama", ["llama-fast", "chat"]),
        ("other", []),
    ]
    refused = client.patch(f"/api/deployments/{made['id']}", json={"aliases": ["a", "a"]})
    assert (refused.status_code, refused.json()["field"]) == (400, "aliases[1]")
    cleared = client.patch(f"/api/deployments/{made['id']}", json={"aliases": []})
    assert cleared.json()["aliases"] == []
