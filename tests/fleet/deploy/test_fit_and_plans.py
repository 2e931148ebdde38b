"""The fit check and eviction plans: pure rules on a table of fleets, then real evictions."""

from __future__ import annotations

import dataclasses

import pytest
from fleet.deploy.deploykit import standin

from dgxmm.errors import DoesNotFit
from dgxmm.fleet import (
    AuditAction,
    BackendKind,
    Deployment,
    DeploymentState,
    EventAction,
    EventOutcome,
    Fleet,
    Gpu,
    GpuInventory,
    InventorySource,
)
from dgxmm.fleet.placement.fit import check_fit, make_plan

S = DeploymentState
INVENTORY = GpuInventory(
    gpus=(Gpu(index=0, name="A100", memory_gib=80.0), Gpu(index=1, name="A100", memory_gib=80.0)),
    source=InventorySource.CONFIGURATION,
)
_ids = iter(range(1, 10_000))


def dep(
    name: str,
    state: S,
    *,
    awake: float,
    asleep: float = 0.0,
    priority: int = 50,
    gpus: tuple[int, ...] = (0,),
    last_request_at: int | None = None,
) -> Deployment:
    return Deployment(
        id=next(_ids),
        name=name,
        model="m",
        backend=BackendKind.EXTERNAL,
        command=None,
        port=None,
        environment={},
        base_url="http://127.0.0.1:1",
        gpus=gpus,
        memory_gib_awake=awake,
        memory_gib_asleep=asleep,
        priority=priority,
        time_zone="UTC",
        startup_timeout_s=60.0,
        state=state,
        state_since=0,
        last_error=None,
        last_request_at=last_request_at,
        created_at=0,
        updated_at=0,
    )


@pytest.mark.parametrize(
    ("state", "held"),
    [
        (S.RUNNING, 30.0),
        (S.STARTING, 30.0),
        (S.STOPPING, 30.0),
        (S.SLEEPING, 5.0),
        (S.STOPPED, 0.0),
        (S.FAILED, 0.0),
    ],
    ids=lambda value: value.value if isinstance(value, S) else str(value),
)
def test_it_counts_what_each_state_holds(state: S, held: float) -> None:
    other = dep("other", state, awake=30, asleep=5)
    target = dep("target", S.STOPPED, awake=80 - held)
    assert check_fit(INVENTORY, [other, target], target, S.RUNNING).fits
    bigger = dataclasses.replace(target, memory_gib_awake=80 - held + 1)
    assert not check_fit(INVENTORY, [other, bigger], bigger, S.RUNNING).fits


def test_it_says_which_gpu_is_short_and_by_how_much() -> None:
    a = dep("chat", S.RUNNING, awake=50, gpus=(0, 1))
    b = dep("code", S.SLEEPING, awake=40, asleep=6, gpus=(1,))
    target = dep("big", S.STOPPED, awake=40, gpus=(0, 1))
    fit = check_fit(INVENTORY, [a, b, target], target, S.RUNNING)
    assert not fit.fits
    assert fit.reason == (
        "GPU 0 (A100, 80 GiB) has 30 GiB free and big needs 40 GiB awake: 10 GiB short "
        "(held: chat 50 GiB awake); GPU 1 (A100, 80 GiB) has 24 GiB free and big needs "
        "40 GiB awake: 16 GiB short (held: chat 50 GiB awake, code 6 GiB asleep)"
    )
    assert [(g.index, g.short_gib) for g in fit.gpus] == [(0, 10.0), (1, 16.0)]


def test_it_refuses_a_gpu_the_inventory_does_not_have() -> None:
    target = dep("far", S.STOPPED, awake=1, gpus=(7,))
    fit = check_fit(INVENTORY, [target], target, S.RUNNING)
    assert (fit.fits, fit.reason) == (
        False,
        "GPU 7 is not in this machine's inventory (GPUs: 0, 1)",
    )
    assert not make_plan(INVENTORY, [target], target, S.RUNNING).feasible


def plan_of(fleet: list[Deployment], target: Deployment) -> list[tuple[str, str]]:
    plan = make_plan(INVENTORY, [*fleet, target], target, S.RUNNING)
    assert plan.feasible, plan.reason
    return [(e.name, e.action.value) for e in plan.evictions]


def test_it_sleeps_the_lowest_priority_first() -> None:
    low = dep("low", S.RUNNING, awake=30, asleep=5, priority=10)
    mid = dep("mid", S.RUNNING, awake=30, asleep=5, priority=20)
    target = dep("target", S.STOPPED, awake=40, priority=60)
    assert plan_of([mid, low], target) == [("low", "sleep")]


def test_among_equal_priorities_it_sleeps_the_one_idle_longest() -> None:
    busy = dep("busy", S.RUNNING, awake=30, asleep=5, priority=10, last_request_at=2_000)
    idle = dep("idle", S.RUNNING, awake=30, asleep=5, priority=10, last_request_at=1_000)
    target = dep("target", S.STOPPED, awake=40, priority=60)
    assert plan_of([busy, idle], target) == [("idle", "sleep")]


def test_it_sleeps_every_candidate_before_it_stops_one() -> None:
    low = dep("low", S.RUNNING, awake=30, asleep=5, priority=10)
    mid = dep("mid", S.RUNNING, awake=30, asleep=5, priority=20)
    target = dep("target", S.STOPPED, awake=70, priority=60)
    assert plan_of([low, mid], target) == [("low", "sleep"), ("mid", "sleep")]


def test_it_stops_the_lowest_priority_when_sleeping_is_not_enough() -> None:
    low = dep("low", S.RUNNING, awake=30, asleep=20, priority=10)
    mid = dep("mid", S.RUNNING, awake=30, asleep=5, priority=20)
    target = dep("target", S.STOPPED, awake=70, priority=60)
    # Asleep they still hold 25: the lowest one is stopped, the other only sleeps.
    assert plan_of([low, mid], target) == [("low", "stop"), ("mid", "sleep")]


def test_it_drops_a_sleep_that_a_stop_made_unneeded() -> None:
    low = dep("low", S.SLEEPING, awake=60, asleep=50, priority=10)
    mid = dep("mid", S.RUNNING, awake=20, asleep=15, priority=20)
    target = dep("target", S.STOPPED, awake=55, priority=60)
    # Sleeping mid frees 5, not enough; stopping low frees 50, enough on its own.
    assert plan_of([low, mid], target) == [("low", "stop")]


def test_it_never_evicts_an_equal_or_higher_priority() -> None:
    equal = dep("equal", S.RUNNING, awake=40, asleep=5, priority=60)
    higher = dep("higher", S.RUNNING, awake=30, asleep=5, priority=90)
    target = dep("target", S.STOPPED, awake=30, priority=60)
    plan = make_plan(INVENTORY, [equal, higher, target], target, S.RUNNING)
    assert not plan.feasible
    assert plan.evictions == ()
    assert "no deployment of lower priority than 60" in plan.reason


def test_it_leaves_alone_what_holds_nothing_on_the_short_gpu() -> None:
    elsewhere = dep("elsewhere", S.RUNNING, awake=70, asleep=5, priority=1, gpus=(1,))
    low = dep("low", S.RUNNING, awake=50, asleep=5, priority=10)
    target = dep("target", S.STOPPED, awake=60, priority=60)
    assert plan_of([elsewhere, low], target) == [("low", "sleep")]


def test_a_plan_that_cannot_make_room_says_so() -> None:
    low = dep("low", S.RUNNING, awake=30, asleep=5, priority=10)
    high = dep("high", S.RUNNING, awake=40, asleep=5, priority=90)
    target = dep("target", S.STOPPED, awake=50, priority=60)
    plan = make_plan(INVENTORY, [low, high, target], target, S.RUNNING)
    assert (plan.feasible, plan.evictions) == (False, ())
    assert "even evicting every deployment of lower priority than 60" in plan.reason


# -- on real servers ------------------------------------------------------------------------


def test_it_refuses_a_start_that_does_not_fit_without_plans(fleet: Fleet) -> None:
    resident = fleet.deployments.create(actor="user:a", **standin("resident", awake=60, priority=1))
    fleet.deployer.start(resident.id, actor="user:a")
    newcomer = fleet.deployments.create(
        actor="user:a", **standin("newcomer", awake=30, priority=99)
    )

    fit = fleet.deployer.fit(newcomer.id, S.RUNNING)
    assert not fit.fits
    assert "GPU 0 (H100, 80 GiB) has 20 GiB free and newcomer needs 30 GiB" in fit.reason
    with pytest.raises(DoesNotFit, match="10 GiB short"):
        fleet.deployer.start(newcomer.id, actor="schedule:4", plans=False)

    assert fleet.deployments.get(newcomer.id).state is S.STOPPED
    assert not (fleet.backends.run_dir(newcomer.id) / "server.pid").exists()
    assert fleet.deployments.get(resident.id).state is S.RUNNING
    event = fleet.events.list(newcomer.id)[0]
    assert (event.action, event.actor, event.outcome) == (
        EventAction.START,
        "schedule:4",
        EventOutcome.SKIPPED,
    )
    assert "10 GiB short" in (event.detail or "")
    assert fleet.audit.list(action=AuditAction.DEPLOYMENT_START)[0].actor == "schedule:4"


def test_a_manual_start_evicts_what_its_plan_shows(fleet: Fleet) -> None:
    low = fleet.deployments.create(actor="user:a", **standin("low", awake=30, priority=10))
    same = fleet.deployments.create(actor="user:a", **standin("same", awake=30, priority=60))
    other_gpu = fleet.deployments.create(
        actor="user:a", **standin("other", awake=70, priority=1, gpus=(1,))
    )
    for deployment in (low, same, other_gpu):
        fleet.deployer.start(deployment.id, actor="user:a")
    target = fleet.deployments.create(actor="user:a", **standin("target", awake=40, priority=60))

    plan = fleet.deployer.plan(target.id, S.RUNNING)
    assert [(e.name, e.action.value) for e in plan.evictions] == [("low", "sleep")]

    result = fleet.deployer.start(target.id, actor="user:bob")
    assert result.deployment.state is S.RUNNING
    assert [(e.deployment.name, e.deployment.state) for e in result.evictions] == [
        ("low", S.SLEEPING)
    ]
    states = {d.name: d.state for d in fleet.deployments.list()}
    assert states == {"low": S.SLEEPING, "same": S.RUNNING, "other": S.RUNNING, "target": S.RUNNING}
    victim_event = fleet.events.list(low.id)[0]
    assert (victim_event.action, victim_event.actor) == (EventAction.SLEEP, "user:bob")
    assert "evicted to make room for target (priority 60)" in (victim_event.detail or "")


def test_a_wake_without_plans_that_does_not_fit_is_skipped(fleet: Fleet) -> None:
    sleeper = fleet.deployments.create(actor="user:a", **standin("sleeper", awake=50, asleep=2))
    fleet.deployer.start(sleeper.id, actor="user:a")
    fleet.deployer.sleep(sleeper.id, actor="user:a")
    squatter = fleet.deployments.create(actor="user:a", **standin("squatter", awake=40))
    fleet.deployer.start(squatter.id, actor="user:a")

    with pytest.raises(DoesNotFit):
        fleet.deployer.wake(sleeper.id, actor="schedule:9", plans=False)
    assert fleet.deployments.get(sleeper.id).state is S.SLEEPING
    assert fleet.deployments.get(squatter.id).state is S.RUNNING
    assert fleet.events.list(sleeper.id)[0].outcome is EventOutcome.SKIPPED
