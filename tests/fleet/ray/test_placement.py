"""The per-node fit check and plans of ray deployments, as pure functions (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from dgxmm.fleet import BackendKind, Deployment, DeploymentState, Gpu
from dgxmm.fleet.deployments.deployment import Placement
from dgxmm.fleet.placement.cluster import ClusterInventory, RayNode
from dgxmm.fleet.placement.nodes import check_node_fit, make_node_plan

S = DeploymentState
A = "a" * 56
B = "b" * 56


def node(node_id: str, count: int, gib: float, *, alive: bool = True, **res: float) -> RayNode:
    return RayNode(
        node_id=node_id,
        address="127.0.0.1",
        alive=alive,
        resources={"GPU": float(count), **res},
        gpus=tuple(Gpu(index=i, name="GPU", memory_gib=gib, node=node_id) for i in range(count)),
    )


CLUSTER = ClusterInventory(address="127.0.0.1:6379", nodes=(node(A, 2, 80.0), node(B, 2, 48.0)))


def ray(
    id: int,
    *,
    on: str | None = None,
    gpus: tuple[int, ...] = (),
    state: DeploymentState = S.STOPPED,
    num_gpus: int = 1,
    priority: int = 50,
    awake: float = 20.0,
    **more: Any,
) -> Deployment:
    return Deployment(
        id=id,
        name=f"d{id}",
        model="m",
        backend=BackendKind.RAY,
        command=("serve",),
        port=None,
        environment={},
        base_url=None,
        gpus=gpus,
        memory_gib_awake=awake,
        memory_gib_asleep=1.0,
        priority=priority,
        time_zone="UTC",
        startup_timeout_s=60.0,
        state=state,
        state_since=0,
        last_error=None,
        last_request_at=None,
        created_at=0,
        updated_at=0,
        ray_address="127.0.0.1:6379",
        num_gpus=num_gpus,
        placement=Placement(node_id=on, node_address="127.0.0.1", url="http://x") if on else None,
        **more,
    )


def test_it_fits_on_the_tightest_node_with_room() -> None:
    held = ray(1, on=A, gpus=(0,), state=S.RUNNING)
    fit = check_node_fit(CLUSTER, [held], ray(2), S.RUNNING)
    assert (fit.fits, fit.node) == (True, A)  # A has 1 free, B 2: A is the tighter fit


def test_a_sleeping_deployment_keeps_its_gpus() -> None:
    asleep = ray(1, on=B, gpus=(0, 1), state=S.SLEEPING, num_gpus=2)
    fit = check_node_fit(CLUSTER, [asleep], ray(2, ray_node=B[:8]), S.RUNNING)
    assert not fit.fits
    assert "0 of 2 GPUs free, 1 needed (held by d1)" in fit.reason


def test_memory_rules_out_a_node() -> None:
    fit = check_node_fit(CLUSTER, [], ray(1, awake=60.0, num_gpus=2), S.RUNNING)
    assert (fit.fits, fit.node) == (True, A)
    fit = check_node_fit(CLUSTER, [], ray(1, awake=90.0), S.RUNNING)
    assert not fit.fits
    assert "has 0 GPUs with 90 GiB, 1 needed" in fit.reason


@pytest.mark.parametrize(
    ("constraint", "fits"),
    [("big", True), (A[:8], True), ("small", False), (A[:4], False)],
    ids=["resource", "id-prefix", "unknown", "prefix-too-short"],
)
def test_ray_node_names_a_resource_or_an_id_prefix(constraint: str, fits: bool) -> None:
    cluster = ClusterInventory(address="x:1", nodes=(node(A, 1, 80.0, big=1.0),))
    fit = check_node_fit(cluster, [], ray(1, ray_node=constraint), S.RUNNING)
    assert fit.fits is fits


def test_a_lost_node_takes_nothing() -> None:
    cluster = ClusterInventory(address="x:1", nodes=(node(A, 2, 80.0, alive=False),))
    fit = check_node_fit(cluster, [], ray(1), S.RUNNING)
    assert not fit.fits
    assert "no live node" in fit.reason


def test_a_wake_fits_where_its_actor_holds_its_gpus() -> None:
    asleep = ray(1, on=B, gpus=(0,), state=S.SLEEPING)
    fit = check_node_fit(CLUSTER, [asleep], asleep, S.RUNNING)
    assert (fit.fits, fit.node) == (True, B)


def test_a_plan_stops_the_lowest_priorities_on_one_node_only() -> None:
    everyone = [
        ray(1, on=A, gpus=(0,), state=S.RUNNING, priority=10),
        ray(2, on=A, gpus=(1,), state=S.SLEEPING, priority=20),
        ray(3, on=B, gpus=(0, 1), state=S.RUNNING, priority=15, num_gpus=2),
    ]
    target = ray(9, num_gpus=2, priority=60)
    plan = make_node_plan(CLUSTER, everyone, target, S.RUNNING)
    assert plan.feasible
    # On B one stop (priority 15) beats two on A (10 and 20): the lowest highest priority.
    assert plan.node == B
    assert [(e.name, e.action.value) for e in plan.evictions] == [("d3", "stop")]


def test_a_plan_keeps_what_it_does_not_need() -> None:
    everyone = [
        ray(1, on=A, gpus=(0,), state=S.RUNNING, priority=10),
        ray(2, on=A, gpus=(1,), state=S.RUNNING, priority=20),
    ]
    one_node = ClusterInventory(address="x:1", nodes=(node(A, 2, 80.0),))
    plan = make_node_plan(one_node, everyone, ray(9, priority=60), S.RUNNING)
    assert [e.name for e in plan.evictions] == ["d1"]


def test_a_plan_never_stops_a_higher_priority() -> None:
    everyone = [ray(1, on=A, gpus=(0,), state=S.RUNNING, priority=70)]
    one_node = ClusterInventory(address="x:1", nodes=(node(A, 1, 80.0),))
    plan = make_node_plan(one_node, everyone, ray(9, priority=60), S.RUNNING)
    assert not plan.feasible
    assert plan.evictions == ()
    assert "on no node would stopping deployments of lower priority than 60" in plan.reason
