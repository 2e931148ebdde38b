"""The deployer's normal path on real stand-in servers: start, sleep, wake, stop; the gate."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from fleet.deploy.deploykit import standin
from fleet.fleetkit import pid_exists

from dgxmm.errors import BackendError, Conflict, ServerGone
from dgxmm.fleet import AuditSubject, DeploymentState, EventAction, EventOutcome, Fleet
from dgxmm.fleet.backends.pidfile import read_pid_file

S = DeploymentState


def chat(url: str) -> int:
    response = httpx.post(
        f"{url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}]},
        timeout=60,
        trust_env=False,
    )
    return response.status_code


def pid_of(fleet: Fleet, deployment_id: int) -> int | None:
    record = read_pid_file(fleet.backends.run_dir(deployment_id) / "server.pid")
    return record.pid if record else None


def test_it_starts_sleeps_wakes_and_stops_a_real_server(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama", "--latency", "10"))
    assert created.state is S.STOPPED

    started = fleet.deployer.start(created.id, actor="user:alice")
    assert (started.outcome, started.deployment.state) == (EventOutcome.DONE, S.RUNNING)
    assert chat(created.url) == 200
    pid = pid_of(fleet, created.id)
    assert pid is not None
    assert pid_exists(pid)

    slept = fleet.deployer.sleep(created.id, actor="schedule:7")
    assert slept.deployment.state is S.SLEEPING
    assert httpx.get(f"{created.url}/is_sleeping", trust_env=False).json() == {"is_sleeping": True}
    assert chat(created.url) == 503

    woken = fleet.deployer.wake(created.id, actor="user:bob")
    assert woken.deployment.state is S.RUNNING
    assert chat(created.url) == 200

    stopped = fleet.deployer.stop(created.id, actor="user:alice")
    assert stopped.deployment.state is S.STOPPED
    assert "SIGTERM" in (stopped.detail or "")
    assert not pid_exists(pid)
    assert pid_of(fleet, created.id) is None

    events = [(e.action, e.actor, e.outcome) for e in reversed(fleet.events.list(created.id))]
    assert events == [
        (EventAction.CREATE, "user:alice", EventOutcome.DONE),
        (EventAction.START, "user:alice", EventOutcome.DONE),
        (EventAction.SLEEP, "schedule:7", EventOutcome.DONE),
        (EventAction.WAKE, "user:bob", EventOutcome.DONE),
        (EventAction.STOP, "user:alice", EventOutcome.DONE),
    ]
    audit = [
        (a.action, a.actor) for a in reversed(fleet.audit.list(subject=AuditSubject.DEPLOYMENT))
    ]
    assert audit == [
        ("deployment.create", "user:alice"),
        ("deployment.start", "user:alice"),
        ("deployment.sleep", "schedule:7"),
        ("deployment.wake", "user:bob"),
        ("deployment.stop", "user:alice"),
    ]
    assert fleet.events.latest(created.id, EventAction.STOP) == fleet.events.list(created.id)[0]


def test_it_fails_the_gate_of_a_server_that_never_gets_healthy(fleet: Fleet) -> None:
    keys = standin("slow", "--startup-delay", "600", timeout=1.5)
    created = fleet.deployments.create(actor="user:alice", **keys)

    with pytest.raises(BackendError, match=r"not healthy within 1\.5 s") as raised:
        fleet.deployer.start(created.id, actor="user:alice")
    assert not isinstance(raised.value, ServerGone)

    after = fleet.deployments.get(created.id)
    assert after.state is S.FAILED
    assert after.last_error is not None
    assert "503" in after.last_error  # the last health check the gate saw
    assert "dgxmm stopped its process" in after.last_error
    assert pid_of(fleet, created.id) is None
    latest = fleet.events.list(created.id)[0]
    assert (latest.action, latest.outcome, latest.actor) == (
        EventAction.START,
        EventOutcome.FAILED,
        "user:alice",
    )
    [insight] = fleet.insights.list()
    assert (insight.kind, insight.severity.value, insight.deployment_id) == (
        "deployment_failed",
        "critical",
        created.id,
    )


def test_it_fails_a_start_whose_command_exits_at_once(fleet: Fleet) -> None:
    keys = standin("broken")
    keys["command"] = [sys.executable, "-c", "import sys; print('no GPU here'); sys.exit(3)"]
    created = fleet.deployments.create(actor="user:alice", **keys)

    with pytest.raises(ServerGone):
        fleet.deployer.start(created.id, actor="user:alice")
    after = fleet.deployments.get(created.id)
    assert after.state is S.FAILED
    assert after.last_error is not None
    assert "exited with code 3" in after.last_error
    assert "no GPU here" in after.last_error  # the log's last lines

    # A failed deployment starts again once its command is fixed.
    fixed = fleet.deployments.update(created.id, "user:alice", command=standin("x")["command"])
    assert fleet.deployer.start(fixed.id, actor="user:alice").deployment.state is S.RUNNING
    assert fleet.deployments.get(created.id).last_error is None


def test_it_refuses_what_a_state_does_not_allow_and_records_the_refusal(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    with pytest.raises(Conflict, match="only a running deployment sleeps"):
        fleet.deployer.sleep(created.id, actor="user:alice")
    with pytest.raises(Conflict, match="start it instead"):
        fleet.deployer.wake(created.id, actor="user:alice")
    skipped = fleet.deployer.stop(created.id, actor="user:alice")
    assert (skipped.outcome, skipped.detail) == (EventOutcome.SKIPPED, "it is already stopped")
    outcomes = [(e.action, e.outcome) for e in fleet.events.list(created.id)[:3]]
    assert outcomes == [
        (EventAction.STOP, EventOutcome.SKIPPED),
        (EventAction.WAKE, EventOutcome.SKIPPED),
        (EventAction.SLEEP, EventOutcome.SKIPPED),
    ]
    assert fleet.deployments.get(created.id).state is S.STOPPED


def test_it_skips_a_start_of_a_running_deployment(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:alice")
    pid = pid_of(fleet, created.id)
    again = fleet.deployer.start(created.id, actor="schedule:3")
    assert (again.outcome, again.deployment.state) == (EventOutcome.SKIPPED, S.RUNNING)
    assert pid_of(fleet, created.id) == pid
    # "Who stopped it" asks the stop that was done, not a later skipped one: a schedule's
    # stop of a stopped deployment is skipped, and a person's stop stays theirs.
    fleet.deployer.stop(created.id, actor="user:alice")
    skipped = fleet.deployer.stop(created.id, actor="schedule:3")
    assert (skipped.outcome, skipped.detail) == (EventOutcome.SKIPPED, "it is already stopped")
    assert fleet.events.stopped_by(created.id) == "user:alice"
    any_outcome = fleet.events.latest(created.id, EventAction.STOP, outcome=None)
    assert any_outcome is not None
    assert any_outcome.actor == "schedule:3"


def test_a_persons_stop_takes_over_a_schedules_stop(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:alice")
    fleet.deployer.stop(created.id, actor="schedule:3")
    taken = fleet.deployer.stop(created.id, actor="user:bob")
    assert taken.outcome is EventOutcome.DONE
    assert taken.detail == (
        "it was stopped already, by schedule:3; the stop is user:bob's now, so no request "
        "or wake schedule starts it"
    )
    assert fleet.events.stopped_by(created.id) == "user:bob"
    assert fleet.deployments.get(created.id).state is S.STOPPED
    again = fleet.deployer.stop(created.id, actor="user:carol")  # a person's already: skipped
    assert (again.outcome, fleet.events.stopped_by(created.id)) == (
        EventOutcome.SKIPPED,
        "user:bob",
    )


def test_it_writes_the_servers_output_to_a_log_under_the_data_dir(
    fleet: Fleet, tmp_path: Path
) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:alice")
    log = tmp_path / "deployments" / str(created.id) / "server.log"
    assert "listening on" in log.read_text()
