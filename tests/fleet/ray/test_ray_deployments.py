"""Ray deployments on a real local cluster of three nodes (see conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fleet.ray.conftest import ray_keys
from support import wait_for

from dgxmm.errors import DoesNotFit
from dgxmm.fleet import DeploymentState, EventAction, Fleet, InsightKind
from dgxmm.fleet.backends.ray import RayBackend
from dgxmm.fleet.demo.local_cluster import LocalCluster
from dgxmm.fleet.placement.cluster import NAMESPACE, RayCluster

S = DeploymentState
pytestmark = pytest.mark.ray


def actor_of(fleet: Fleet, deployment_id: int) -> RayBackend:
    backend = fleet.backends.of(fleet.deployments.get(deployment_id))
    assert isinstance(backend, RayBackend)
    return backend


def actor_exists(name: str) -> bool:
    import ray

    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def test_it_starts_sleeps_wakes_and_stops_on_each_node(
    fleet: Fleet, local_ray: LocalCluster
) -> None:
    for node in ("node-a", "node-b"):
        made = fleet.deployments.create(
            actor="user:a", **ray_keys(f"on-{node}", local_ray.address, node=node)
        )
        started = fleet.deployer.start(made.id, actor="user:a").deployment
        assert started.state is S.RUNNING
        assert started.placement is not None
        assert started.placement.node_id == local_ray.node_id(node)
        assert started.placement.url.startswith("http://127.0.0.1:")
        assert len(started.gpus) == 1  # the GPU Ray gave its actor
        info: dict[str, Any] = actor_of(fleet, made.id)._info or {}
        assert info["cuda_visible_devices"] == str(started.gpus[0])
        assert answers(started.url)

        assert fleet.deployer.sleep(made.id, actor="user:a").deployment.state is S.SLEEPING
        assert actor_of(fleet, made.id).is_sleeping()
        assert fleet.deployer.wake(made.id, actor="user:a").deployment.state is S.RUNNING

        name = actor_of(fleet, made.id).actor
        stopped = fleet.deployer.stop(made.id, actor="user:a").deployment
        assert stopped.state is S.STOPPED
        assert (stopped.placement, stopped.gpus) == (None, ())
        assert not actor_exists(name)  # the actor is ended, its GPU given back
        assert not answers(started.url)  # and its server with it


def test_a_full_node_refuses_while_another_has_room(fleet: Fleet, local_ray: LocalCluster) -> None:
    address = local_ray.address
    big = fleet.deployments.create(
        actor="user:a", **ray_keys("big", address, node="node-b", num_gpus=2)
    )
    fleet.deployer.start(big.id, actor="user:a")
    pinned = fleet.deployments.create(actor="user:a", **ray_keys("pinned", address, node="node-b"))
    free = fleet.deployments.create(actor="user:a", **ray_keys("free", address))

    fit = fleet.deployer.fit(pinned.id, S.RUNNING)
    assert not fit.fits
    assert "0 of 2 GPUs free, 1 needed (held by big)" in fit.reason
    with pytest.raises(DoesNotFit, match="held by big"):
        fleet.deployer.start(pinned.id, actor="schedule:1", plans=False)
    assert fleet.deployments.get(pinned.id).state is S.STOPPED

    fit = fleet.deployer.fit(free.id, S.RUNNING)
    assert fit.fits
    assert fit.node != local_ray.node_id("node-b")
    started = fleet.deployer.start(free.id, actor="user:a").deployment
    assert started.placement is not None
    assert started.placement.node_id == fit.node


def test_a_plan_stops_only_on_the_node_it_chose(fleet: Fleet, local_ray: LocalCluster) -> None:
    address = local_ray.address
    low_a = fleet.deployments.create(
        actor="user:a", **ray_keys("low-a", address, node="node-a", num_gpus=2, priority=10)
    )
    low_b = fleet.deployments.create(
        actor="user:a", **ray_keys("low-b", address, node="node-b", num_gpus=2, priority=30)
    )
    for deployment in (low_a, low_b):
        fleet.deployer.start(deployment.id, actor="user:a")
    # Two GPUs of 40 GiB: node-a or node-b, never node-c (one GPU of 24 GiB).
    urgent = fleet.deployments.create(
        actor="user:a", **ray_keys("urgent", address, num_gpus=2, priority=90, awake=40.0)
    )

    plan = fleet.deployer.plan(urgent.id, S.RUNNING)
    assert plan.feasible
    assert plan.node == local_ray.node_id("node-a")
    assert [(e.name, e.action.value) for e in plan.evictions] == [("low-a", "stop")]

    result = fleet.deployer.start(urgent.id, actor="user:a")
    assert [e.deployment.name for e in result.evictions] == ["low-a"]
    assert fleet.deployments.get(low_a.id).state is S.STOPPED
    assert fleet.deployments.get(low_b.id).state is S.RUNNING  # the other node: untouched
    placed = fleet.deployments.get(urgent.id).placement
    assert placed is not None
    assert placed.node_id == local_ray.node_id("node-a")


def test_a_dgxmm_restart_finds_its_actors_by_name(
    make_fleet: Callable[..., Fleet], local_ray: LocalCluster, ray_cluster: RayCluster
) -> None:
    import ray

    first = make_fleet()
    awake = first.deployments.create(
        actor="user:a", **ray_keys("awake", local_ray.address, node="node-a")
    )
    asleep = first.deployments.create(
        actor="user:a", **ray_keys("asleep", local_ray.address, node="node-b")
    )
    first.deployer.start(awake.id, actor="user:a")
    first.deployer.start(asleep.id, actor="user:a")
    first.deployer.sleep(asleep.id, actor="user:a")
    names = {d: actor_of(first, d).actor for d in (awake.id, asleep.id)}
    first.close()
    ray.shutdown()  # the driver goes away with dgxmm; detached actors stay

    second = make_fleet()  # connects again, reattaches in its constructor
    assert {d.name: d.state for d in second.deployments.list()} == {
        "asleep": S.SLEEPING,
        "awake": S.RUNNING,
    }
    for deployment_id, name in names.items():
        assert second.events.list(deployment_id)[0].action is EventAction.REATTACH
        assert actor_exists(name)
        assert actor_of(second, deployment_id).actor == name
    # Driven by the new dgxmm: a start again is refused as running, never a second actor.
    assert second.deployer.start(awake.id, actor="user:a").outcome.value == "skipped"
    named = [
        a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"] in names.values()
    ]
    assert len(named) == 2
    assert second.deployer.wake(asleep.id, actor="user:a").deployment.state is S.RUNNING
    second.deployer.stop(awake.id, actor="user:a")
    assert not actor_exists(names[awake.id])


def test_a_lost_node_fails_its_deployments_within_one_metrics_pass(
    fleet: Fleet, local_ray: LocalCluster, ray_cluster: RayCluster
) -> None:
    doomed = fleet.deployments.create(
        actor="user:a", **ray_keys("doomed", local_ray.address, node="node-c", awake=10.0)
    )
    fleet.deployer.start(doomed.id, actor="user:a")
    asleep = fleet.deployments.create(
        actor="user:a",
        **ray_keys("asleep-on-c", local_ray.address, node="node-c", num_gpus=0, asleep=0.0),
    )
    fleet.deployer.start(asleep.id, actor="user:a")
    fleet.deployer.sleep(asleep.id, actor="user:a")  # a sleeping one: only its health is asked
    node_c = local_ray.node_id("node-c")

    local_ray.kill_node("node-c")
    wait_for(
        lambda: not any(n.alive for n in ray_cluster.inventory().nodes if n.node_id == node_c),
        "Ray to declare node-c dead",
    )
    fleet.metrics.rollup_all()  # one pass

    for deployment in (doomed, asleep):
        failed = fleet.deployments.get(deployment.id)
        assert failed.state is S.FAILED
        assert failed.placement is None
        assert failed.last_error is not None
        assert "its node has died" in failed.last_error  # Ray's words, through the actor
        insights = fleet.insights.list(deployment_id=deployment.id)
        assert [i.kind for i in insights] == [InsightKind.DEPLOYMENT_FAILED]
        assert f"{deployment.name} failed" in insights[0].message
    # The node is gone from what a start may use.
    assert not fleet.deployer.fit(doomed.id, S.RUNNING).fits


def test_nothing_of_ray_talks_to_another_address_than_the_loopback(
    fleet: Fleet, local_ray: LocalCluster
) -> None:
    # A server running, so its actor's connections count too.
    made = fleet.deployments.create(actor="user:a", **ray_keys("probe", local_ray.address))
    fleet.deployer.start(made.id, actor="user:a")
    peers = _peers_of(_descendants(os.getpid()) | {os.getpid()})
    assert peers  # the driver talks to the GCS at least
    assert {peer for peer in peers if not peer.startswith("127.")} == set()


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _peers_of(pids: set[int]) -> set[str]:
    """Return the remote addresses of the established TCP connections of these processes."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    peers: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "01" or fields[9] not in inodes:  # 01: ESTABLISHED
                continue
            peers.add(_address(fields[2].split(":")[0], width))
    return peers


def _address(hexed: str, width: int) -> str:
    raw = bytes.fromhex(hexed)
    if width == 8:
        return ".".join(str(b) for b in raw[::-1])
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
    flat = b"".join(words)
    if flat[:12] == b"\0" * 10 + b"\xff\xff":  # an IPv4 address mapped into IPv6
        return ".".join(str(b) for b in flat[12:])
    return flat.hex()
