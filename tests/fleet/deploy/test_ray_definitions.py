"""A ray deployment's definition: its own fields checked, and a clear refusal without Ray."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from fastapi.testclient import TestClient
from support import STANDIN

from dgxmm.errors import DefinitionError
from dgxmm.fleet import BackendKind, Fleet


def ray_keys(**more: Any) -> dict[str, Any]:
    return {
        "name": "on-ray",
        "model": "m",
        "backend": "ray",
        "command": [*STANDIN, "--port", "{port}", "--model", "m"],
        "ray_address": "127.0.0.1:6379",
        "num_gpus": 2,
        "memory_gib_awake": 20.0,
        **more,
    }


def test_it_creates_a_ray_deployment_with_no_gpu_of_its_own(fleet: Fleet) -> None:
    made = fleet.deployments.create(actor="user:a", **ray_keys(ray_node="big-gpus"))
    assert made.backend is BackendKind.RAY
    assert (made.num_gpus, made.ray_node, made.port, made.gpus) == (2, "big-gpus", None, ())
    assert made.url == ""  # no actor yet, so no URL
    # An edit of what it runs is checked again; the rest stays.
    changed = fleet.deployments.update(made.id, "user:a", num_gpus=1, priority=70)
    assert (changed.num_gpus, changed.priority, changed.ray_address) == (1, 70, "127.0.0.1:6379")


@pytest.mark.parametrize(
    ("keys", "field", "words"),
    [
        ({"gpus": [0]}, "gpus", "set num_gpus"),
        ({"ray_address": None}, "ray_address", "needs its Ray cluster's address"),
        ({"ray_address": "ray://head"}, "ray_address", "is not host:port"),
        ({"num_gpus": -1}, "num_gpus", "out of range"),
        ({"num_gpus": 1.5}, "num_gpus", "not a whole number"),
        ({"base_url": "http://x:1"}, "base_url", "ray runs a command"),
        ({"command": None}, "command", "needs its command line"),
    ],
    ids=["gpus", "no-address", "bad-address", "negative", "fraction", "base-url", "no-command"],
)
def test_it_refuses_a_ray_field_it_cannot_use(
    fleet: Fleet, keys: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(DefinitionError, match=words) as refused:
        fleet.deployments.create(actor="user:a", **ray_keys(**keys))
    assert refused.value.field == field
    assert fleet.deployments.list() == []


def test_ray_fields_are_refused_on_another_backend(fleet: Fleet) -> None:
    with pytest.raises(DefinitionError, match="is for backend ray, not external") as refused:
        fleet.deployments.create(
            actor="user:a",
            name="ext",
            model="m",
            backend="external",
            base_url="http://127.0.0.1:1",
            num_gpus=1,
        )
    assert refused.value.field == "num_gpus"


def test_without_ray_installed_backend_ray_is_refused_saying_what_to_install(
    client: TestClient, fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as without it
    answer = client.post("/api/deployments", json=ray_keys())
    assert answer.status_code == 400
    assert answer.json()["field"] == "backend"
    assert "pip install 'dgxmm[ray]'" in answer.json()["message"]
    assert fleet.deployments.list() == []


def test_dgxmm_does_not_import_ray_until_a_ray_deployment_needs_it() -> None:
    import subprocess

    check = "import sys, dgxmm.server, dgxmm.fleet; print('ray' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True
    ).stdout
    assert found.strip() == "False"
