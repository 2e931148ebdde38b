"""The demo on Ray: its deployments on their nodes; the Deployments page groups GPUs by node."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fleet.ray.conftest import NODES

from dgxmm.errors import InvalidInput
from dgxmm.fleet import BackendKind, DeploymentState, Fleet
from dgxmm.fleet.demo.demo import Demo
from dgxmm.fleet.demo.local_cluster import LocalCluster
from dgxmm.server import FLEET_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.server.serve import ServeOptions, serve
from dgxmm.store import Store

pytestmark = pytest.mark.ray


def test_the_demo_puts_its_deployments_on_the_nodes_and_the_page_groups_them(
    fleet: Fleet, store: Store, local_ray: LocalCluster
) -> None:
    demo = Demo(fleet, say=lambda _: None, ray_address=local_ray.address, ray_nodes=NODES[:2])
    made = demo.create()
    assert {d.backend for d in made} == {BackendKind.RAY}
    for deployment in made:
        fleet.deployer.start(deployment.id, actor="system", plans=False)
    where = {d.name: d.placement.node_id for d in fleet.deployments.list() if d.placement}
    assert where == {
        "demo-chat": local_ray.node_id("node-a"),
        "demo-code": local_ray.node_id("node-a"),
        "demo-batch": local_ray.node_id("node-b"),
    }

    host = Host(store, time_zone="UTC", clock=store.clock, system_jobs=[])
    tokens = Tokens(store.engine, store.clock)
    app = create_app(Services(host=host, tokens=tokens, fleet=fleet), [FLEET_ROUTES])
    try:
        with TestClient(app) as client:
            client.headers["Authorization"] = f"Bearer {tokens.create(Role.VIEWER, 'v')}"
            page = client.get("/deployments").text
            listed = client.get("/api/deployments").json()["ray_nodes"]
    finally:
        host.stop()
    node_a = local_ray.node_id("node-a")
    section = page.split(f'data-node="{node_a}"', 1)[1].split('class="ray-node"', 1)[0]
    assert f"Ray node {node_a[:8]} (127.0.0.1)" in page
    assert len(re.findall(r'class="gpu" data-gpu=', section)) == 2  # node-a's two GPUs
    assert "40 of 80 GiB held" in section  # demo-chat: half of an 80 GiB GPU
    held = {n["node_id"]: [g["held_by"] for g in n["gpus"]] for n in listed}
    assert sorted(name for names in held[node_a] for name in names) == ["demo-chat", "demo-code"]

    demo.stop()
    assert {d.state for d in fleet.deployments.list()} == {DeploymentState.STOPPED}


def test_ray_goes_with_demo(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as refused:
        serve(ServeOptions(data_dir=tmp_path, ray=True), say=lambda _: None)
    assert refused.value.field == "--ray"
