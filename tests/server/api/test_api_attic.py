"""The attic over the API: list, restore, remove; rollback with its preview."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from server.apikit import define
from store.catalogkit import attic_entry, catalog_document, nested
from support import at

from dgxmm.server import Host


def make_job(client: TestClient) -> None:
    response = client.post(
        "/api/queries/define",
        json={"name": "add", "params": {}, "body": "INSERT INTO notes (label) VALUES ('x')"},
    )
    assert response.status_code == 200, response.text
    define(client, name="adder", schedule="0 3 * * *", action="query", query="add")


def test_it_lists_restores_and_removes_a_dropped_job(client: TestClient, host: Host) -> None:
    make_job(client)
    before = client.get("/api/jobs").json()["jobs"][-1]
    assert client.post("/api/jobs/drop", json={"name": "adder"}).status_code == 200
    listed = client.get("/api/attic").json()["attic"]
    assert [(e["kind"], e["name"], e["dropped_by"], e["why"]) for e in listed] == [
        ("job", "adder", "user:alice", "dropped")
    ]
    assert listed[0]["dropped"].startswith("2026-06-01T10:00:30")
    restored = client.post("/api/attic/restore", json={"kind": "job", "name": "adder"})
    assert restored.status_code == 200, restored.text
    assert restored.json()["switched_off"] is None
    after = client.get("/api/jobs").json()["jobs"][-1]
    assert (after["name"], after["effects"], after["args"]) == (
        "adder",
        before["effects"],
        before["args"],
    )
    assert host.scheduler.get("adder").name == "adder"  # picked up by the host at once
    assert client.get("/api/attic").json()["attic"] == []
    client.post("/api/jobs/drop", json={"name": "adder"})
    removed = client.post("/api/attic/remove", json={"kind": "job", "name": "adder"})
    assert removed.status_code == 200, removed.text
    assert removed.json()["removed"]["name"] == "adder"
    assert client.get("/api/attic").json()["attic"] == []
    gone = client.post("/api/attic/remove", json={"kind": "job", "name": "adder"})
    assert gone.status_code == 404


def test_it_refuses_a_restore_over_a_live_name_with_409_naming_the_field(
    client: TestClient,
) -> None:
    make_job(client)
    client.post("/api/jobs/drop", json={"name": "adder"})
    define(client, name="adder", schedule="0 4 * * *", action="checkpoint")
    response = client.post("/api/attic/restore", json={"kind": "job", "name": "adder"})
    assert response.status_code == 409
    assert response.json()["field"] == "name"
    assert client.get("/api/jobs").json()["jobs"][-1]["action"] == "checkpoint"


def test_it_refuses_a_kind_the_attic_does_not_hold(client: TestClient) -> None:
    response = client.post("/api/attic/restore", json={"kind": "setting", "name": "x"})
    assert response.status_code in (400, 422)
    assert response.json()["field"] == "kind"


def test_it_previews_a_rollback_and_then_does_exactly_that(client: TestClient) -> None:
    make_job(client)  # versions 1 and 2
    client.post("/api/jobs/drop", json={"name": "adder"})  # 3
    preview = client.post("/api/store/rollback?dry_run=true", json={"version": 2})
    assert preview.status_code == 200, preview.text
    assert preview.json()["steps"] == [
        {"kind": "job", "name": "adder", "change": "define", "switched_off": None}
    ]
    assert client.get("/api/store").json()["catalog_version"] == 3
    done = client.post("/api/store/rollback", json={"version": 2})
    assert done.status_code == 200, done.text
    assert done.json()["steps"] == preview.json()["steps"]
    assert (done.json()["version"], done.json()["dry_run"]) == (4, False)
    assert [j["name"] for j in client.get("/api/jobs").json()["jobs"]][-1] == "adder"
    journal = client.get("/api/store").json()["journal"]
    assert (journal[1]["subject"], journal[1]["change"], journal[1]["actor"]) == (
        "catalog",
        "rollback",
        "user:alice",
    )


def test_it_refuses_a_version_the_catalog_does_not_have(client: TestClient) -> None:
    response = client.post("/api/store/rollback", json={"version": 7})
    assert response.status_code == 400
    assert response.json()["field"] == "version"


def test_a_viewer_may_list_the_attic_but_not_change_it(viewer: TestClient) -> None:
    assert viewer.get("/api/attic").status_code == 200
    body = {"kind": "job", "name": "adder"}
    assert viewer.post("/api/attic/restore", json=body).status_code == 403
    assert viewer.post("/api/attic/remove", json=body).status_code == 403
    assert viewer.post("/api/store/rollback", json={"version": 0}).status_code == 403


@pytest.mark.parametrize(
    ("document", "field"),
    [
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_at=-(10**18))]),
            "attic[0].dropped_at",
            id="dropped-at-before-year-1",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(defined_at=10**18)]),
            "attic[0].defined_at",
            id="defined-at-after-year-9999",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(item={"definition": {}, "x": nested(900)})]),
            "attic[0].item",
            id="item-nesting-900-lists",
        ),
        pytest.param(
            catalog_document(
                jobs=[
                    {"name": "j", "schedule": "0 3 * * *", "action": "checkpoint", "x": nested(900)}
                ]
            ),
            "jobs[0].x",
            id="job-key-nesting-900-lists",
        ),
        pytest.param(
            catalog_document(queries=[{"name": ["a"], "params": {}, "body": "SELECT 1"}]),
            "queries[0].name",
            id="query-named-by-a-list",
        ),
        pytest.param(
            catalog_document(
                jobs=[{"name": {"a": 1}, "schedule": "0 3 * * *", "action": "checkpoint"}]
            ),
            "jobs[0].name",
            id="job-named-by-an-object",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(defined_version=2**64)]),
            "attic[0].defined_version",
            id="defined-version-2-to-the-64",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_at=-(2**63) - 1)]),
            "attic[0].dropped_at",
            id="dropped-at-below-64-bits",
        ),
    ],
)
def test_it_refuses_an_import_that_would_poison_the_catalog_with_400_naming_the_field(
    client: TestClient, document: dict[str, object], field: str
) -> None:
    response = client.post("/api/catalog/import", json=document)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert client.get("/api/attic").json()["attic"] == []
    assert client.get("/api/catalog").status_code == 200
    assert client.get("/store").status_code == 200


def test_a_restore_defines_the_entrys_name_and_never_replaces_another_live_job(
    client: TestClient,
) -> None:
    define(client, name="live1", schedule="0 4 * * *", action="checkpoint")
    definition = {"name": "live1", "schedule": "0 3 * * *", "action": "checkpoint"}
    entry = attic_entry(item={"definition": definition, "effects": []})
    imported = client.post("/api/catalog/import", json=catalog_document(attic=[entry]))
    assert imported.status_code == 200, imported.text
    response = client.post("/api/attic/restore", json={"kind": "job", "name": "other"})
    assert response.status_code == 400, response.text
    assert response.json()["field"] == "name"
    jobs = {job["name"]: job for job in client.get("/api/jobs").json()["jobs"]}
    assert jobs["live1"]["schedule"] == "0 4 * * *"
    assert "other" not in jobs
    assert [e["name"] for e in client.get("/api/attic").json()["attic"]] == ["other"]


def test_entries_at_the_first_and_last_instants_it_takes_are_listed_shown_and_removed(
    client: TestClient,
) -> None:
    first, last = at("0001-01-02T00:00:00+00:00"), at("9999-12-30T23:59:59.999999+00:00")
    entries = [
        attic_entry(name="first", defined_at=first, dropped_at=first),
        attic_entry(name="last", defined_at=last, dropped_at=last),
    ]
    imported = client.post("/api/catalog/import", json=catalog_document(attic=entries))
    assert imported.status_code == 200, imported.text
    listed = client.get("/api/attic")
    assert listed.status_code == 200, listed.text
    assert [(e["name"], e["dropped"][:10]) for e in listed.json()["attic"]] == [
        ("last", "9999-12-31"),  # in the host's zone, Europe/Berlin
        ("first", "0001-01-02"),
    ]
    assert client.get("/store").status_code == 200
    for name in ("first", "last"):
        removed = client.post("/api/attic/remove", json={"kind": "job", "name": name})
        assert removed.status_code == 200, removed.text
    assert client.get("/api/attic").json()["attic"] == []
