"""Helpers of the API tests (import: `from server.apikit import define`)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def define(client: TestClient, **keys: object) -> dict[str, object]:
    """Define a job through the API and return its row (asserting success)."""
    response = client.post("/api/jobs/define", json=keys)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body
