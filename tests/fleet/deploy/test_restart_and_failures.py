"""A dgxmm restart finds its servers again; a server that dies is found and marked failed."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest
from fleet.deploy.deploykit import standin
from fleet.fleetkit import pid_exists
from support import wait_for

from dgxmm.clock import ManualClock
from dgxmm.errors import ServerGone
from dgxmm.fleet import DeploymentState, EventAction, EventOutcome, Fleet
from dgxmm.fleet.backends.pidfile import read_pid_file
from dgxmm.store import writing

S = DeploymentState


def pid_of(fleet: Fleet, deployment_id: int) -> int:
    record = read_pid_file(fleet.backends.run_dir(deployment_id) / "server.pid")
    assert record is not None
    return record.pid


def kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not pid_exists(pid), f"process {pid} to die")


def test_a_new_fleet_finds_its_running_and_sleeping_servers(
    make_fleet: Callable[..., Fleet],
) -> None:
    first = make_fleet()
    awake = first.deployments.create(actor="user:a", **standin("awake"))
    asleep = first.deployments.create(actor="user:a", **standin("asleep", gpus=(1,)))
    first.deployer.start(awake.id, actor="user:a")
    first.deployer.start(asleep.id, actor="user:a")
    first.deployer.sleep(asleep.id, actor="user:a")
    pids = {awake.id: pid_of(first, awake.id), asleep.id: pid_of(first, asleep.id)}
    first.close()  # dgxmm stops; its model servers do not

    second = make_fleet()  # dgxmm starts again on the same store and data dir
    assert {d.name: d.state for d in second.deployments.list()} == {
        "awake": S.RUNNING,
        "asleep": S.SLEEPING,
    }
    for deployment_id, pid in pids.items():
        assert pid_exists(pid)
        event = second.events.list(deployment_id)[0]
        assert (event.action, event.actor) == (EventAction.REATTACH, "system")
    # The new fleet drives what the old one started.
    second.deployer.wake(asleep.id, actor="user:a")
    second.deployer.stop(awake.id, actor="user:a")
    assert not pid_exists(pids[awake.id])
    assert second.deployments.get(asleep.id).state is S.RUNNING


def test_a_server_that_died_while_dgxmm_was_down_is_failed(
    make_fleet: Callable[..., Fleet],
) -> None:
    first = make_fleet()
    created = first.deployments.create(actor="user:a", **standin("llama"))
    first.deployer.start(created.id, actor="user:a")
    pid = pid_of(first, created.id)
    first.close()
    kill(pid)

    second = make_fleet()
    after = second.deployments.get(created.id)
    assert after.state is S.FAILED
    assert "not found after a dgxmm restart" in (after.last_error or "")
    [insight] = second.insights.list()
    assert insight.kind == "deployment_failed"


def test_a_start_up_cut_short_by_a_restart_is_failed_and_its_process_stopped(
    make_fleet: Callable[..., Fleet],
) -> None:
    first = make_fleet()
    created = first.deployments.create(actor="user:a", **standin("llama"))
    first.deployer.start(created.id, actor="user:a")
    pid = pid_of(first, created.id)
    with writing(first.store.engine) as connection:  # as if dgxmm died during the gate
        first.deployments.set_state(connection, created.id, S.STARTING)
    first.close()

    second = make_fleet()
    after = second.deployments.get(created.id)
    assert after.state is S.FAILED
    assert "cut short by a dgxmm restart" in (after.last_error or "")
    assert not pid_exists(pid)


def test_the_rollup_job_finds_a_killed_server_and_marks_it_failed(
    fleet: Fleet, clock: ManualClock
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:a")
    assert fleet.metrics.rollup_all() == "1 sampled"
    kill(pid_of(fleet, created.id))

    assert fleet.metrics.rollup_all() == "0 sampled, 1 gone"
    after = fleet.deployments.get(created.id)
    assert after.state is S.FAILED
    assert "was killed by SIGKILL" in (after.last_error or "")
    event = fleet.events.list(created.id)[0]
    assert (event.action, event.actor, event.outcome) == (
        EventAction.FAILED,
        "system",
        EventOutcome.DONE,
    )
    assert fleet.events.latest(created.id, EventAction.FAILED) == event
    [insight] = fleet.insights.list()
    assert (insight.kind, insight.severity.value) == ("deployment_failed", "critical")
    # Seen again next minute: still one insight, no second event.
    clock.advance(60_000_000)
    assert fleet.metrics.rollup_all() == "0 sampled"
    assert len(fleet.insights.list()) == 1


def test_a_killed_sleeping_server_is_found_by_its_health_check(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:a")
    fleet.deployer.sleep(created.id, actor="user:a")
    kill(pid_of(fleet, created.id))
    assert fleet.metrics.rollup_all() == "0 sampled, 1 gone"
    assert fleet.deployments.get(created.id).state is S.FAILED


def test_a_fresh_sample_of_a_killed_server_fails_it(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:a")
    kill(pid_of(fleet, created.id))
    with fleet.deployer.lock(created.id):  # as the schedule runner holds it
        with pytest.raises(ServerGone):
            fleet.metrics.sample_now(created.id)
        assert fleet.deployments.get(created.id).state is S.FAILED
