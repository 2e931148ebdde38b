"""``/api/proxy/settings``: the proxy's hold bounds, read by viewers, set by admins only."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from dgxmm.fleet import Fleet
from dgxmm.proxy import MAX_HELD_SETTING, read_bounds


def test_it_shows_the_defaults_and_changes_one_bound(client: TestClient, fleet: Fleet) -> None:
    shown = client.get("/api/proxy/settings").json()["settings"]
    held_bytes = {"max_held_bytes": 128 << 20, "max_held_bytes_total": 512 << 20}
    assert shown == {"max_held": 1000, "max_hold_s": 600.0, **held_bytes}
    changed = client.put("/api/proxy/settings", json={"max_hold_s": 90})
    assert changed.status_code == 200
    assert changed.json()["settings"] == {"max_held": 1000, "max_hold_s": 90.0, **held_bytes}
    assert read_bounds(fleet.store.get_setting).max_hold_s == 90.0  # what the proxy reads


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"max_held": -1}, "max_held", id="negative-held"),
        pytest.param({"max_hold_s": 1e9}, "max_hold_s", id="hold-too-long"),
        pytest.param({"max_hold_s": -0.5}, "max_hold_s", id="negative-hold"),
    ],
)
def test_it_refuses_a_bound_naming_the_field_and_changes_nothing(
    client: TestClient, fleet: Fleet, body: dict[str, object], field: str
) -> None:
    answer = client.put("/api/proxy/settings", json=body)
    assert answer.status_code == 400
    assert answer.json()["field"] == field
    assert fleet.store.get_setting(MAX_HELD_SETTING) is None


def test_it_lists_every_bound_it_refuses(client: TestClient, fleet: Fleet) -> None:
    answer = client.put("/api/proxy/settings", json={"max_held": -1, "max_hold_s": 1e9})
    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == ["max_held", "max_hold_s"]
    assert read_bounds(fleet.store.get_setting).max_held == 1000  # nothing changed


def test_a_viewer_reads_but_does_not_set(viewer: TestClient) -> None:
    assert viewer.get("/api/proxy/settings").status_code == 200
    assert viewer.put("/api/proxy/settings", json={"max_held": 5}).status_code == 403


def test_a_text_where_a_number_goes_is_named_beside_the_other_wrong_ones(
    client: TestClient, fleet: Fleet
) -> None:
    # The console's form sends what was typed: "soon" is refused beside the -1, not alone.
    answer = client.put("/api/proxy/settings", json={"max_held": -1, "max_hold_s": "soon"})
    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == ["max_held", "max_hold_s"]
    assert read_bounds(fleet.store.get_setting).max_held == 1000


def test_get_proxy_says_there_is_no_proxy_and_lists_the_models(
    client: TestClient, fleet: Fleet
) -> None:
    fleet.deployments.create(
        actor="user:a", name="chat", model="org/chat", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=10.0, aliases=["assistant"],
    )  # fmt: skip
    shown = client.get("/api/proxy").json()
    assert (shown["address"], shown["running"], shown["refusals"]) == (None, False, [])
    (model,) = shown["models"]
    assert (model["model"], model["aliases"], model["state"]) == (
        "org/chat",
        ["assistant"],
        "stopped",
    )
    assert shown["settings"]["max_held_bytes"] == 128 << 20
