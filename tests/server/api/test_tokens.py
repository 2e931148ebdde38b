"""The tokens API (admins): create with a role and an expiry, shown once; list; revoke."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from dgxmm.clock import ManualClock
from dgxmm.server import Tokens
from dgxmm.time_units import DAY_US


def test_a_refused_token_names_every_wrong_field(client: TestClient) -> None:
    answer = client.post(
        "/api/tokens", json={"role": "boss", "name": "tab\there", "expires_in_days": 0}
    )
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert [e["field"] for e in body["errors"]] == ["role", "name", "expires_in_days"]
    assert body["field"] == "role"
    assert "admin" in body["errors"][0]["message"]
    assert "viewer" in body["errors"][0]["message"]


def test_it_creates_lists_and_revokes_a_token_by_its_id(client: TestClient) -> None:
    made = client.post(
        "/api/tokens", json={"role": "viewer", "name": "grafana", "expires_in_days": 30}
    ).json()
    assert made["token"].startswith("dgxmm_")
    assert (made["role"], made["name"]) == ("viewer", "grafana")
    listed = client.get("/api/tokens").json()["tokens"]
    row = next(t for t in listed if t["name"] == "grafana")
    assert (row["role"], row["state"]) == ("viewer", "live")
    assert row["expires_at"] == made["expires_at"]
    assert row["expires_at"] is not None
    assert made["token"] not in str(listed)  # the list never carries a token
    assert client.post(f"/api/tokens/{row['id']}/revoke").json()["revoked"] is True
    again = client.post(f"/api/tokens/{row['id']}/revoke")
    assert again.status_code == 404
    state = next(t for t in client.get("/api/tokens").json()["tokens"] if t["id"] == row["id"])
    assert state["state"] == "revoked"


def test_a_token_opens_nothing_once_it_expired(
    client: TestClient, tokens: Tokens, clock: ManualClock
) -> None:
    made = client.post("/api/tokens", json={"role": "viewer", "expires_in_days": 1}).json()
    headers = {"Authorization": f"Bearer {made['token']}"}
    assert client.get("/api/jobs", headers=headers).status_code == 200
    clock.advance(DAY_US)
    assert client.get("/api/jobs", headers=headers).status_code == 401
    row = next(t for t in client.get("/api/tokens").json()["tokens"] if t["name"] == "viewer")
    assert row["state"] == "expired"
    assert tokens.identify(made["token"]) is None


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/tokens"), ("POST", "/api/tokens"), ("POST", "/api/tokens/1/revoke")],
)
def test_a_viewer_may_not_touch_tokens(viewer: TestClient, method: str, path: str) -> None:
    answer = viewer.request(method, path, json={"role": "admin"})
    assert answer.status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "role"),
        ({"role": "viewer", "name": ""}, "name"),
        ({"role": "viewer", "name": "x" * 201}, "name"),
        ({"role": "viewer", "expires_in_days": 3651}, "expires_in_days"),
        ({"role": "viewer", "expires_in_days": -1}, "expires_in_days"),
    ],
    ids=["no-role", "empty-name", "long-name", "too-long", "negative"],
)
def test_a_wrong_field_answers_400_naming_it(
    client: TestClient, body: dict[str, object], field: str
) -> None:
    answer = client.post("/api/tokens", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field


def test_a_wrong_type_is_named_too(client: TestClient) -> None:
    answer = client.post("/api/tokens", json={"role": "viewer", "expires_in_days": "ten"})
    assert answer.status_code == 422
    assert answer.json()["field"] == "expires_in_days"
