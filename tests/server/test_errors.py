"""Malformed bodies, oversized bodies and the OpenAPI document."""

from __future__ import annotations

from fastapi.testclient import TestClient

from dgxmm.store import Store


def test_it_answers_malformed_json_with_422_naming_the_body(
    client: TestClient, store: Store
) -> None:
    response = client.post(
        "/api/jobs/define", content=b'{"name": "x",', headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    body = response.json()
    assert (body["error"], body["field"]) == ("invalid_request", "body")
    assert "not valid JSON" in body["message"]
    assert store.jobs() == []


def test_it_answers_a_body_over_one_mebibyte_with_413(client: TestClient, store: Store) -> None:
    huge = (
        b'{"name": "x", "schedule": "* * * * *", "action": "checkpoint", "description": "'
        + b"a" * (1 << 20)
        + b'"}'
    )
    response = client.post(
        "/api/jobs/define", content=huge, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["field"] == "body"
    assert store.jobs() == []


def test_it_answers_413_for_a_streamed_body_without_a_length(
    client: TestClient, store: Store
) -> None:
    def chunks() -> object:
        yield b'{"name": "x", "description": "'
        for _ in range(20):
            yield b"b" * 65536
        yield b'"}'

    response = client.post(
        "/api/queries/define", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert store.queries() == []


def test_it_publishes_its_openapi_document(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    paths = set(document["paths"])
    assert {
        "/api/jobs",
        "/api/jobs/define",
        "/api/jobs/drop",
        "/api/jobs/enable",
        "/api/jobs/schedule",
        "/api/jobs/run",
        "/api/jobs/history",
        "/api/jobs/preview",
        "/api/queries",
        "/api/queries/define",
        "/api/queries/drop",
        "/api/store/checkpoint",
        "/api/store/backup",
        "/api/store/restore",
        "/api/store/compact",
    } <= paths
