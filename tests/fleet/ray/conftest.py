"""One local Ray cluster for every Ray test: three nodes on 127.0.0.1 with pretend GPUs.

Started once per session (Ray takes seconds to start a node), shut down in a finally.
``node-a`` is the head (2 GPUs of 80 GiB), ``node-b`` a worker (2 of 48 GiB), ``node-c``
a worker with 1 GPU that the node-loss test kills. Each test gets fleets on its own store
and data directory; every ray deployment a test left up is stopped after it.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fleet.fleetkit import TEST_TIMEOUTS
from support import STANDIN, at, need

from dgxmm.clock import ManualClock
from dgxmm.errors import Busy, DgxmmError
from dgxmm.fleet import BackendKind, DeploymentState, Fleet, GpuInventory, InventorySource
from dgxmm.fleet.demo.local_cluster import LocalCluster, LocalNode
from dgxmm.fleet.placement.cluster import RayCluster
from dgxmm.store import Store

NODES = (
    LocalNode(name="node-a", num_gpus=2, gpu_memory_gib=80.0),
    LocalNode(name="node-b", num_gpus=2, gpu_memory_gib=48.0),
    LocalNode(name="node-c", num_gpus=1, gpu_memory_gib=24.0),
)


@pytest.fixture(scope="session")
def local_ray() -> Iterator[LocalCluster]:
    need(importlib.util.find_spec("ray") is not None, "ray is not installed (.[ray])")
    cluster = LocalCluster(NODES)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.shutdown()


@pytest.fixture(scope="session")
def ray_cluster(local_ray: LocalCluster) -> RayCluster:
    """The driver's view of the local cluster, shared so NVML is asked once per node."""
    return RayCluster(local_ray.address)


@pytest.fixture
def store(fresh_db: Path) -> Iterator[Store]:
    opened = Store.open(fresh_db, clock=ManualClock(at("2026-06-01T10:00:30+00:00")))
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()


@pytest.fixture
def make_fleet(store: Store, ray_cluster: RayCluster) -> Iterator[Callable[..., Fleet]]:
    """Build fleets on the test's store (a second one is a dgxmm restart)."""
    made: list[Fleet] = []

    def make(**options: Any) -> Fleet:
        options.setdefault("inventory", GpuInventory(gpus=(), source=InventorySource.CONFIGURATION))
        options.setdefault("http_timeouts", TEST_TIMEOUTS)
        options.setdefault("stop_grace_s", 5.0)
        options.setdefault("ray_clusters", [ray_cluster])
        fleet = Fleet(store, **options)
        made.append(fleet)
        return fleet

    yield make
    if made:
        last = made[-1]
        for deployment in last.deployments.list():
            if deployment.backend is BackendKind.RAY and deployment.state is not (
                DeploymentState.STOPPED
            ):
                with contextlib.suppress(DgxmmError):  # its node is gone: so is its actor
                    last.backends.of(deployment).stop(grace_s=2.0)
    for fleet in made:
        fleet.close()


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    return make_fleet()


def ray_keys(
    name: str,
    address: str,
    *,
    node: str | None = None,
    num_gpus: int = 1,
    priority: int = 50,
    awake: float = 20.0,
    asleep: float = 2.0,
    **more: Any,
) -> dict[str, Any]:
    """Return the keys of a ray deployment that runs the stand-in on a free port of its node."""
    return {
        "name": name,
        "model": f"{name}-model",
        "backend": "ray",
        "command": [*STANDIN, "--host", "{host}", "--port", "{port}", "--model", f"{name}-model"],
        "ray_address": address,
        "ray_node": node,
        "num_gpus": num_gpus,
        "memory_gib_awake": awake,
        "memory_gib_asleep": asleep,
        "priority": priority,
        "startup_timeout_s": 60.0,
        **more,
    }
