"""A deployment's idle settings through the API (issue 25): the idle ladder, the idle policy
and the wake lead round-trip; bad input answers 400 naming the field and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet
from dgxmm.store import Store, writing

LADDER = {"idle_sleep_after_s": 300, "idle_deepen_after_s": 1800, "idle_stop_after_s": 7200}


def idle_of(row: dict[str, Any]) -> dict[str, Any]:
    """The idle keys of a deployment's JSON."""
    keys = (*LADDER, "idle_policy", "wake_lead", "idle_paused", "asleep_level")
    return {key: row[key] for key in keys}


def test_a_new_deployment_has_every_idle_setting_off(client: TestClient) -> None:
    made = client.post("/api/deployments", json=standin("llama")).json()
    assert idle_of(made) == {
        "idle_sleep_after_s": None,
        "idle_deepen_after_s": None,
        "idle_stop_after_s": None,
        "idle_policy": "ladder",
        "wake_lead": "off",
        "idle_paused": None,
        "asleep_level": None,
    }


def test_the_idle_settings_round_trip_and_a_step_is_cleared_with_null(
    client: TestClient, viewer: TestClient
) -> None:
    keys = {**standin("llama"), **LADDER, "idle_policy": "histogram", "wake_lead": "measured"}
    made = client.post("/api/deployments", json=keys)
    assert made.status_code == 201, made.text
    path = f"/api/deployments/{made.json()['id']}"
    read = viewer.get(path).json()
    assert (read["idle_sleep_after_s"], read["idle_deepen_after_s"], read["idle_stop_after_s"]) == (
        300.0,
        1800.0,
        7200.0,
    )
    assert (read["idle_policy"], read["wake_lead"]) == ("histogram", "measured")

    changed = client.patch(path, json={"idle_deepen_after_s": None, "wake_lead": 42.5})
    assert changed.status_code == 200, changed.text
    after = viewer.get(path).json()
    assert (after["idle_sleep_after_s"], after["idle_deepen_after_s"]) == (300.0, None)
    assert (after["idle_stop_after_s"], after["wake_lead"]) == (7200.0, 42.5)
    assert after["idle_policy"] == "histogram"  # not given: kept
    ladder = client.patch(path, json={"idle_policy": "ladder", "wake_lead": "off"}).json()
    assert (ladder["idle_policy"], ladder["wake_lead"]) == ("ladder", "off")


def test_the_priced_policy_is_taken_without_a_ladder_and_kept(client: TestClient) -> None:
    made = client.post("/api/deployments", json={**standin("llama"), "idle_policy": "priced"})
    assert made.status_code == 201, made.text
    path = f"/api/deployments/{made.json()['id']}"
    read = client.get(path).json()
    assert read["idle_policy"] == "priced"
    assert read["idle_sleep_after_s"] is None  # its rungs are its own: no ladder needed
    kept = client.patch(path, json={"wake_lead": "measured"}).json()
    assert kept["idle_policy"] == "priced"


REFUSED = [
    pytest.param({"idle_sleep_after_s": -5}, "idle_sleep_after_s", "-5", id="negative"),
    pytest.param({"idle_sleep_after_s": 0}, "idle_sleep_after_s", "from 1 s", id="zero"),
    pytest.param({"idle_stop_after_s": 10**9}, "idle_stop_after_s", "(a year)", id="huge-duration"),
    pytest.param(
        {"idle_sleep_after_s": 600, "idle_deepen_after_s": 300},
        "idle_deepen_after_s",
        "300 s is not after idle_sleep_after_s (600 s)",
        id="deepen-before-sleep",
    ),
    pytest.param(
        {"idle_deepen_after_s": 600, "idle_stop_after_s": 600},
        "idle_stop_after_s",
        "is not after idle_deepen_after_s",
        id="stop-at-the-deepening",
    ),
    pytest.param({"idle_policy": "sometimes"}, "idle_policy", "'sometimes'", id="unknown-policy"),
    pytest.param({"idle_policy": "Priced"}, "idle_policy", "or 'priced'", id="policy-case"),
    pytest.param({"wake_lead": "soon"}, "wake_lead", "'soon'", id="lead-soon"),
    pytest.param({"wake_lead": 901}, "wake_lead", "from 0 to 900", id="lead-over-15-min"),
    pytest.param({"wake_lead": -1}, "wake_lead", "from 0 to 900", id="lead-negative"),
]


@pytest.mark.parametrize(("keys", "field", "says"), REFUSED)
def test_a_bad_idle_setting_is_refused_naming_it_and_creates_nothing(
    client: TestClient, keys: dict[str, Any], field: str, says: str
) -> None:
    refused = client.post("/api/deployments", json={**standin("llama"), **keys})
    assert refused.status_code == 400, refused.text
    assert refused.json()["field"] == field
    assert says in refused.json()["message"]
    assert client.get("/api/deployments").json()["deployments"] == []


@pytest.mark.parametrize(("keys", "field", "says"), REFUSED)
def test_a_bad_idle_change_is_refused_naming_it_and_changes_nothing(
    client: TestClient, keys: dict[str, Any], field: str, says: str
) -> None:
    made = client.post("/api/deployments", json={**standin("llama"), "idle_sleep_after_s": 60})
    path = f"/api/deployments/{made.json()['id']}"
    before = client.get(path).json()
    refused = client.patch(path, json=keys)
    assert refused.status_code == 400, refused.text
    assert (refused.json()["field"], says in refused.json()["message"]) == (field, True)
    assert client.get(path).json() == before


def test_a_deepening_that_is_not_after_the_deployments_own_sleep_is_refused(
    client: TestClient,
) -> None:
    made = client.post("/api/deployments", json={**standin("llama"), **LADDER}).json()
    path = f"/api/deployments/{made['id']}"
    refused = client.patch(path, json={"idle_deepen_after_s": 120})  # its sleep is at 300 s
    assert (refused.status_code, refused.json()["field"]) == (400, "idle_deepen_after_s")
    assert client.get(path).json()["idle_deepen_after_s"] == 1800.0


def test_a_wrong_type_is_422_naming_the_field(client: TestClient) -> None:
    wrong = client.post("/api/deployments", json={**standin("llama"), "idle_sleep_after_s": "5m"})
    assert (wrong.status_code, wrong.json()["field"]) == (422, "idle_sleep_after_s")
    assert client.get("/api/deployments").json()["deployments"] == []


def test_a_change_of_its_idle_settings_lifts_a_pause_of_its_idle_policy(
    client: TestClient, fleet: Fleet, store: Store
) -> None:
    made = client.post("/api/deployments", json={**standin("llama"), **LADDER}).json()
    with writing(store.engine) as connection:
        fleet.deployments.set_idle_paused(connection, made["id"], "the idle sleep failed: boom")
    path = f"/api/deployments/{made['id']}"
    assert client.get(path).json()["idle_paused"] == "the idle sleep failed: boom"
    assert client.patch(path, json={"priority": 60}).json()["idle_paused"] is not None
    assert client.patch(path, json={"idle_sleep_after_s": 240}).json()["idle_paused"] is None
