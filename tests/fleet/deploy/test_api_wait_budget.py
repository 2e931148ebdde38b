"""A deployment's wait budget through the API (issue 42, point 4): ``idle_wait_budget``, a
mean added wait per request in ms and/or a p99 in s, round-trips, is set and cleared whole,
and a bad value answers 400 naming the field (or its key) and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgxmm.fleet import WaitBudget, parse_wait_budget

BUDGET = {"mean_ms": 50, "p99_s": 5}


def test_a_new_deployment_has_no_budget(client: TestClient) -> None:
    made = client.post("/api/deployments", json=standin("llama")).json()
    assert made["idle_wait_budget"] is None


def test_the_budget_round_trips_is_replaced_whole_and_cleared_with_null(
    client: TestClient, viewer: TestClient
) -> None:
    keys = {**standin("llama"), "idle_policy": "priced", "idle_wait_budget": BUDGET}
    made = client.post("/api/deployments", json=keys)
    assert made.status_code == 201, made.text
    path = f"/api/deployments/{made.json()['id']}"
    assert viewer.get(path).json()["idle_wait_budget"] == {"mean_ms": 50.0, "p99_s": 5.0}

    # A change gives the whole budget: the p99 not given is gone, not kept from before.
    changed = client.patch(path, json={"idle_wait_budget": {"mean_ms": 120}})
    assert changed.status_code == 200, changed.text
    assert viewer.get(path).json()["idle_wait_budget"] == {"mean_ms": 120.0}
    only_p99 = client.patch(path, json={"idle_wait_budget": {"p99_s": 2.5}}).json()
    assert only_p99["idle_wait_budget"] == {"p99_s": 2.5}
    kept = client.patch(path, json={"priority": 70}).json()
    assert kept["idle_wait_budget"] == {"p99_s": 2.5}  # not given: kept
    cleared = client.patch(path, json={"idle_wait_budget": None}).json()
    assert cleared["idle_wait_budget"] is None


REFUSED = [
    pytest.param(5, "idle_wait_budget", "is not an object", id="a-number"),
    pytest.param("50ms", "idle_wait_budget", "is not an object", id="text"),
    pytest.param([50], "idle_wait_budget", "is not an object", id="a-list"),
    pytest.param({}, "idle_wait_budget", "give mean_ms, p99_s or both", id="empty"),
    pytest.param({"mean_ms": None}, "idle_wait_budget", "give mean_ms", id="only-nulls"),
    pytest.param({"mean": 50}, "idle_wait_budget.mean", "is not mean_ms or p99_s", id="key"),
    pytest.param({"mean_ms": -1}, "idle_wait_budget.mean_ms", "from 0 to 600000", id="neg"),
    pytest.param({"mean_ms": 600_001}, "idle_wait_budget.mean_ms", "from 0", id="over-hold"),
    pytest.param({"p99_s": 601}, "idle_wait_budget.p99_s", "from 0 to 600 s", id="p99-over"),
    pytest.param({"p99_s": "5s"}, "idle_wait_budget.p99_s", "not a number of s", id="p99-text"),
    pytest.param({"mean_ms": True}, "idle_wait_budget.mean_ms", "not a number", id="bool"),
]


@pytest.mark.parametrize(("value", "field", "says"), REFUSED)
def test_a_bad_budget_is_refused_naming_it_and_creates_nothing(
    client: TestClient, value: Any, field: str, says: str
) -> None:
    refused = client.post("/api/deployments", json={**standin("llama"), "idle_wait_budget": value})
    assert refused.status_code == 400, refused.text
    assert refused.json()["field"] == field
    assert says in refused.json()["message"]
    assert client.get("/api/deployments").json()["deployments"] == []


@pytest.mark.parametrize(("value", "field", "says"), REFUSED)
def test_a_bad_budget_change_is_refused_naming_it_and_changes_nothing(
    client: TestClient, value: Any, field: str, says: str
) -> None:
    made = client.post("/api/deployments", json={**standin("llama"), "idle_wait_budget": BUDGET})
    path = f"/api/deployments/{made.json()['id']}"
    before = client.get(path).json()
    refused = client.patch(path, json={"idle_wait_budget": value})
    assert refused.status_code == 400, refused.text
    assert (refused.json()["field"], says in refused.json()["message"]) == (field, True)
    assert client.get(path).json() == before


_numbers = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**7), max_value=10**7),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)
_bodies = st.one_of(
    _numbers,
    st.lists(_numbers, max_size=2),
    st.dictionaries(st.sampled_from(["mean_ms", "p99_s", "p50_s", ""]), _numbers, max_size=3),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=_bodies)
def test_any_budget_body_is_kept_as_checked_or_refused_naming_it_with_nothing_changed(
    client: TestClient, value: Any
) -> None:
    listed = client.get("/api/deployments").json()["deployments"]
    made = listed[0] if listed else client.post("/api/deployments", json=standin("llama")).json()
    path = f"/api/deployments/{made['id']}"
    before = client.get(path).json()
    # NaN and infinities go as JSON's NaN and Infinity literals, which Python's reader takes.
    body = json.dumps({"idle_wait_budget": value}, allow_nan=True)
    answer = client.patch(path, content=body, headers={"Content-Type": "application/json"})
    try:
        expected: WaitBudget | None = parse_wait_budget(value)
    except ValueError:
        expected = None
        refused = True
    else:
        refused = False
    if refused:
        assert answer.status_code == 400, answer.text
        assert answer.json()["field"].startswith("idle_wait_budget")
        assert client.get(path).json() == before
    else:
        assert answer.status_code == 200, answer.text
        shown = None if expected is None else expected.to_json()
        assert answer.json()["idle_wait_budget"] == shown
